"""`python -m preflight whatif`: both sides on common random numbers, paired differences, key-path errors."""

from __future__ import annotations

import json
import pytest

from preflight import check as cli
from preflight.overrides import apply_sets, stack_values
from preflight.whatif import compare, sides
from simulation.replicate import replication_seeds, run_replications
from simulation.report_terms import difference
from stackconfig.load import ROOT
from validation.errors import InputError

# The L40S with 8 % more memory bandwidth: decode steps are bandwidth-bound, so dev chat's p99 drops by ~10 %.
FASTER_GPU = "catalog.gpus.L40S={memoryGib: 44.99, bandwidthGbps: 933, bf16Tflops: 362}"
P99 = "p99 latency (s)"


def test_paired_replications_detect_a_10_percent_p99_change_that_independent_runs_cannot():
    before, after = sides("dev", [FASTER_GPU])
    [c] = [c for c in compare(before, after, replications=8).comparisons if c.after.scenario == "steady"]
    b, a = c.before.metrics[P99].value, c.after.metrics[P99].value
    assert 0.05 < (b - a) / b < 0.15, (b, a)  # a ~10 % change
    paired = c.difference[P99]
    assert paired.hi < 0, paired  # common random numbers: the interval excludes 0
    # The same after side on independent seeds (as two separate runs would be).
    trial = _trial(after)   # a fleet run: the service's report is trial.report(run)
    other = [trial.report(r) for r in run_replications([trial.scenario], replication_seeds(before.gate.seed + 1, 8),
                                                       base_dir=ROOT)[0]]
    independent = difference(P99, c.reports[0], other, paired=False)
    # Independent runs cannot resolve a change of this size: their interval's half-width exceeds the change itself
    # (whether one draw of it happens to straddle 0 depends on the seeds).
    assert (independent.hi - independent.lo) / 2 > abs(paired.value), (independent, paired)
    # the pooled p99s' paired interval is 2.8 times narrower here (the mean of the runs' own p99s, which the p99
    # terms no longer use, gave over 3: it paired figures that each ran low)
    assert independent.hi - independent.lo > 2.5 * (paired.hi - paired.lo)


def _trial(cfg):
    import gate

    return gate.trials(cfg)[0]


def test_against_a_revision_with_no_edits_is_the_same_run_on_both_sides(capsys):
    assert cli.main(["whatif", "--stack", "dev", "--against", "HEAD", "--replications", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    chat = out["scenarios"]["chat"]
    # --replications 2, but each verdict is the gate's: dev's gate decides chat's steady run on 5
    # (gate.replications.min); the seeds are the most any scenario took: its rollout's 20 (17 clean runs pass it)
    assert out["against"] == "HEAD" and chat["unchanged"] and out["replications"] == 2 and len(out["seeds"]) == 20
    assert chat["before"]["replications"] == chat["after"]["replications"] == chat["paired"]["replications"] == 5
    assert chat["before"]["metrics"] == chat["after"]["metrics"] == chat["paired"]["after"]
    assert chat["difference"][P99] == {"value": 0.0, "ci95": [0.0, 0.0], "replications": 5}


def test_rate_scale_changes_both_sides_traffic():
    before, after = sides("prod", ["services.code.minReplicas=2"], rate_scale=2)
    assert before.services[0].workload["rate"] == after.services[0].workload["rate"] == 22
    assert after.services[1].min_replicas == 2 and before.services[1].min_replicas == 1


def test_an_after_side_that_misses_its_slo_exits_1_and_plots_say_where(tmp_path, capsys):
    assert cli.main(["whatif", "--stack", "dev", "--replications", "4", "--set", "services.chat.slo.p99LatencyS=1",
                     "--plot", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "after − before (paired)" in out
    path = tmp_path / "whatif-dev-chat.png"
    assert f"plot written: {path}" in out.replace("\n", "") and path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("assignment, message", [
    ("services.chat.containerConcurency=8",
     "kserve-preflight:services[0].containerConcurency: got 8; unknown key; did you mean 'containerConcurrency'?"),
    ("services.chat.containerConcurrency=-3", "kserve-preflight:services[0].containerConcurrency: got -3"),
    ("services.chatt.minReplicas=1", "--set: got 'services.chatt.minReplicas=1'; services: no item 'chatt'; "
                                     "expected one of chat"),
    ("services.chat.minReplicas", "--set: got 'services.chat.minReplicas'; expected PATH=VALUE"),
])
def test_bad_set_paths_get_the_configs_key_path_errors_and_exit_2(assignment, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["whatif", "--stack", "dev", "--set", assignment])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_set_paths_reach_annotations_lists_and_new_keys():
    _, values = stack_values("prod")
    out = apply_sets(values, ['services.code.annotations["autoscaling.knative.dev/initial-scale"]="2"',
                              "services.chat.annotations.autoscaling.knative.dev/window=60s",
                              "services.1.maxReplicas=3", "gpuNodeGroup.instanceTypes=[g6e.2xlarge]"])
    chat, code = out["services"]
    assert code["annotations"]["autoscaling.knative.dev/initial-scale"] == "2" and code["maxReplicas"] == 3
    assert chat["annotations"]["autoscaling.knative.dev/window"] == "60s"
    assert out["gpuNodeGroup"]["instanceTypes"] == ["g6e.2xlarge"]
    assert values["services"][1]["maxReplicas"] == 4  # the before side is untouched


def test_a_bad_revision_is_an_input_error():
    with pytest.raises(InputError, match="--against: got 'no-such-rev'"):
        sides("dev", [], against="no-such-rev")


def test_a_workload_file_replaces_both_sides_traffic(tmp_path):
    path = tmp_path / "burst.yaml"
    path.write_text("workload: {kind: spike, rate: 0.5, peak_rate: 2, at_s: 300, duration_s: 120}\n")
    before, after = sides("dev", ["services.chat.minReplicas=1"], workload=str(path))
    assert before.services[0].workload == after.services[0].workload
    assert before.services[0].workload["kind"] == "spike"
    (tmp_path / "bad.yaml").write_text("- not a mapping\n")
    with pytest.raises(InputError, match="--workload"):
        sides("dev", [], workload=str(tmp_path / "bad.yaml"))
    (tmp_path / "typo.yaml").write_text("{kind: spike, rate: 0.5, peak_rate: 2, at_s: 300, duraton_s: 120}\n")
    with pytest.raises(InputError) as err:  # the workload schema's key path, in the workload file
        sides("dev", [], workload=str(tmp_path / "typo.yaml"))
    assert (f"in {tmp_path / 'typo.yaml'}:" in str(err.value)
            and "\n  - duraton_s: got 120; unknown key" in str(err.value))
    assert "services[0]" not in str(err.value) and "Pulumi.dev.yaml" not in str(err.value)


def test_a_rate_that_rises_is_marked_changed_with_its_interval_above_zero():
    """dev chat capped at one pod: when its node is lost there is no other pod, so its nodeLoss run's requests
    time out (504) where two pods kept serving; the paired rate difference (MOVER) excludes 0 and says so."""
    from preflight.whatif_tables import _change

    before, after = sides("dev", ["services.chat.maxReplicas=1"])
    [c] = [c for c in compare(before, after, replications=5).comparisons if c.after.scenario == "nodeLoss"]
    rise = c.difference["504 rate"]
    assert rise.lo > 0 and rise.value > 0.05, rise
    after, before = (side["504 rate"].value for side in reversed(c.metrics))   # the two columns
    assert after - before == pytest.approx(rise.value, abs=1e-15)
    assert _change(rise) == "[bold]changed[/]"
    assert _change(c.difference["503 rate"]) == "[dim]no detectable change[/]"

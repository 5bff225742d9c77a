"""The rollout scenario's term: the fraction of runs whose new revision was not Ready within its progress deadline,
k of r with its Clopper–Pearson interval, held to COLD_START_MISS_FRACTION like maxColdStartS (gate/verdict.py
`rollout_check`). It replaced a t-interval of the mean ready time against the deadline, which failed on any one
stalled run (`n/a > SLO 600`) and passed on 5 clean runs (review rev9-stats finding 1). The mean time to Ready is
reported (metrics, note), not judged."""

from __future__ import annotations

import pytest

import gate
from gate.verdict import FAIL, PASS, READY_METRIC, ROLLOUT_TERM, UNDECIDED, judge, rollout_check
from simulation.analytic import clopper_pearson
from stackconfig.load import project_values, stack_config_values
from stackconfig.platform import COLD_START_MISS_FRACTION, COLD_START_RUNS_TO_PASS
from stackconfig.schema import Slo, parse_stack_config
from validation.errors import InputError

DEADLINE = 600.0
SLO = Slo(p99_latency_s=60, max_error_rate=0.01, max_503_rate=0.01, max_cold_start_s=None, p99_ttft_s=None)


def run(ready_s: float | None) -> dict:
    """A rollout replication's report: the new revision Ready after `ready_s`, or None (not by the deadline)."""
    return {"requests": 1000, "status_counts": {"200": 1000}, "latency_s": {"p99": 1.0, "count": 1000},
            "rollout": {"at_s": 60.0, "progress_deadline_s": DEADLINE, "ready_s": ready_s},
            "throughput_rps": 1.0, "replicas": {"mean": 1.0}, "pod_gpu_hours": 0.2, "cold_starts": 1,
            "replica_series": {"t": [0.0], "desired": [1]}, "duration_s": 720.0}


def term(ready: list[float | None]):
    return rollout_check([run(x) for x in ready], DEADLINE)


def test_one_stalled_run_is_one_miss_counted_with_an_interval_not_a_failed_gate():
    check = term([None] + [400.0] * 4)            # the old term: `n/a > SLO 600`, FAIL at the first look
    assert check.name == ROLLOUT_TERM and check.limit == COLD_START_MISS_FRACTION
    assert check.status == UNDECIDED and check.estimate.value == pytest.approx(0.2)
    assert (check.estimate.lo, check.estimate.hi) == pytest.approx(clopper_pearson(1, 5))
    assert "progress deadline 600 s: 1 of 5 runs not Ready by then" in check.describe("chat [rollout]")
    assert "mean Ready 400" in check.note and "the 4 runs Ready" in check.note


def test_five_clean_rollouts_do_not_pass_the_stall_fraction_needs_17():
    assert term([400.0] * 5).status == UNDECIDED               # the old term passed here: 0 of 5 bounds it at 0.52
    assert "0 stalled passes only from 17 runs" in term([400.0] * 5).note
    assert term([400.0] * (COLD_START_RUNS_TO_PASS - 1)).status == UNDECIDED
    assert term([400.0] * COLD_START_RUNS_TO_PASS).status == PASS


def test_stalls_clearly_above_one_in_five_fail():
    assert term([None] * 4 + [400.0]).status == FAIL
    assert term([None] * 5).status == FAIL and "never Ready" in term([None] * 5).note
    assert term([None] * 3 + [400.0] * 2).status == UNDECIDED    # 3 of 5 could still be a 1-in-5 revision


def test_rollouts_all_ready_just_before_the_deadline_pass():
    # the reviewer's part C: the t-interval of the mean reached 615 s, undecided, so `fail` failed it; no run stalled
    check = term([300.0] + [598.0 + 0.1 * i for i in range(19)])
    assert check.status == PASS and not check.fails("fail")
    assert term([600.0] * 20).status == PASS                      # Ready exactly at the deadline is in time
    assert term([600.5] + [300.0] * 19).estimate.value == pytest.approx(1 / 20)   # just past it is a stall


def test_the_mean_time_to_ready_is_a_reported_figure_with_its_interval():
    v = judge("chat", SLO, [run(x) for x in [None, 300.0, 320.0, 340.0, 360.0]], scenario="rollout",
              progress_deadline_s=DEADLINE)
    ready = v.metrics[READY_METRIC]
    assert ready.value == pytest.approx(330.0) and ready.replications == 4 and ready.lo < 330 < ready.hi <= DEADLINE
    assert [c.name for c in v.checks][-1] == ROLLOUT_TERM and READY_METRIC not in [c.name for c in v.checks]
    assert judge("chat", SLO, [run(300.0)] * 5).checks[-1].name != ROLLOUT_TERM     # no deadline, no term
    near = judge("chat", SLO, [run(300.0)] + [run(599.0)] * 4, progress_deadline_s=DEADLINE).metrics[READY_METRIC]
    assert near.hi == DEADLINE                                    # clipped: no ready time is above the deadline


def _dev(**gate_keys):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["services"][0]["annotations"]["serving.knative.dev/progress-deadline"] = "600s"
    values["gate"] = {"scenarios": ["rollout"], **gate_keys}
    return parse_stack_config(values, project, "dev")


def test_the_gate_counts_stalls_over_its_replications_instead_of_failing_on_the_first():
    # the reviewer's reproduction: dev at a 600 s deadline, gate.seed 1, failed after 5 runs on one stall
    [v] = gate.check_stack(_dev())
    [check] = [c for c in v.checks if c.name == ROLLOUT_TERM]
    assert v.replications == 20 and 0 < check.estimate.value < COLD_START_MISS_FRACTION
    assert check.status == UNDECIDED and v.passed and gate.gate_warnings([v])   # a warning, settled on its estimate
    [strict] = gate.check_stack(_dev(undecided="fail"))
    assert not strict.passed


def test_a_budget_too_small_for_the_rollout_term_is_refused_under_undecided_fail():
    with pytest.raises(InputError) as err:
        _dev(undecided="fail", replications={"min": 4, "max": 16})
    [problem] = err.value.problems
    assert problem.path == "kserve-preflight:gate.replications.max" and problem.value == 16
    assert "expected at least 17 under gate.undecided: fail" in problem.allowed
    assert "(chat) is rolled out by the rollout scenario" in problem.allowed
    # controls: a budget of 17, the default policy, or no rollout scenario
    assert _dev(undecided="fail", replications={"min": 4, "max": 17}).gate.max_replications == 17
    assert _dev(replications={"min": 4, "max": 16}).gate.undecided == "estimate"
    assert _dev(undecided="fail", replications={"min": 4, "max": 16}, scenarios=["steady"]).gate.scenarios == \
        ("steady",)

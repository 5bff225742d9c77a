"""Verdicts that hold: replications until each SLO check's 95 % interval decides, within a budget."""

from __future__ import annotations

import pulumi
import pytest

import gate
from offline import run_program
from simulation.executors import LocalExecutor
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"


def _dev(replications: dict, p99: float = 1000.0, undecided: str | None = None):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["gate"] = {"durationS": 300, "replications": replications, "scenarios": ["steady"],
                      **({"undecided": undecided} if undecided else {})}
    values["services"][0]["slo"]["p99LatencyS"] = p99
    return parse_stack_config(values, project, "dev")


def test_a_clear_pass_stops_at_the_minimum():
    # min 3: at 2 of max 8 an interim look decides on a 99.73 % interval (Haybittle–Peto, gate/sequential.py),
    # whose t on 1 degree of freedom is 236: nothing decides there, however clear
    [v] = gate.check_stack(_dev({"min": 3, "max": 8}))
    assert v.replications == 3 and v.passed and not v.undecided
    assert all(c.status == "pass" and c.ci95[1] <= c.limit for c in v.checks)


def test_a_check_on_the_edge_runs_to_the_budget_then_warns_or_fails():
    [four] = gate.check_stack(_dev({"min": 4, "max": 4}))
    edge = four.checks[0].observed  # the SLO set to the 4-replication estimate: its interval straddles it
    [v] = gate.check_stack(_dev({"min": 2, "max": 4}, p99=edge))
    assert v.replications == 4 and v.checks[0].status == "undecided"
    assert v.passed and "undecided after 4 replications (gate.replications.max)" in v.warnings()[0]
    assert gate.gate_failure([v]) is None and gate.gate_warnings([v])
    [strict] = gate.check_stack(_dev({"min": 2, "max": 4}, p99=edge, undecided="fail"))
    assert not strict.passed and "undecided" in strict.misses()[0]


def test_a_clear_miss_fails_on_the_lower_end_of_its_interval():
    [v] = gate.check_stack(_dev({"min": 3, "max": 12}, p99=1.0))
    assert not v.passed and v.checks[0].status == "FAIL" and v.checks[0].ci95[0] > 1.0
    assert "p99 latency (s)" in gate.gate_failure([v])


def test_undecided_fail_stops_pulumi_before_any_resource():
    [two] = gate.check_stack(_dev({"min": 2, "max": 2}))
    p99 = two.checks[0].observed  # the SLO on the 2-replication estimate: its interval straddles it

    def edge(c):
        c[f"{P}:gate"] = {"durationS": 300, "replications": {"min": 2, "max": 2}, "undecided": "fail",
                          "scenarios": ["steady"]}
        c[f"{P}:services"][0]["slo"]["p99LatencyS"] = p99

    with pytest.raises(pulumi.RunError, match="undecided"):
        run = run_program("dev", edit=edge)
        pytest.fail(f"registered {len(run.resources)} resources")
    # the control: the same edge as a warning deploys
    run = run_program("dev", edit=lambda c: (edge(c), c[f"{P}:gate"].update(undecided="warn")))
    assert run.resources


def test_same_seeds_same_verdict_on_any_executor():
    cfg = _dev({"min": 3, "max": 3})
    serial = [v.to_dict() for v in gate.check_stack(cfg)]
    pool = LocalExecutor(2)
    try:
        assert [v.to_dict() for v in gate.check_stack(cfg, executor=pool)] == serial
    finally:
        pool.close()


@pytest.mark.parametrize("reps, message", [
    ({"min": 1}, "replications.min: got 1; expected an integer between 2 and 1000"),
    ({"min": 10, "max": 5}, "replications.max: got 5; expected an integer >= replications.min (10)"),
    ({"mni": 3}, "did you mean 'min'"),
])
def test_bad_replication_settings_name_their_key(reps, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _dev(reps)
    with pytest.raises(InputError, match="gate.undecided: got 'maybe'"):
        _dev({}, undecided="maybe")

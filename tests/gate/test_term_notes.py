"""What a check's figure rests on, said in its note: a p99 of too few values in all runs cannot pass (and the gate
adds no replications for it), runs with no successful request are left out of a p99, a rate with no event
in any run has a bound that assumes independent requests, and a maxColdStartS term the replication budget cannot
pass is refused at load under gate.undecided: fail."""

from __future__ import annotations

import pytest

import gate
from p99_runs import latency
from gate.verdict import FAIL, MIN_P99_VALUES, PASS, UNDECIDED, Verdict, slo_checks
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import Slo, parse_stack_config
from validation.errors import InputError

SLO = Slo(p99_latency_s=10.0, max_error_rate=0.01, max_503_rate=0.01, max_cold_start_s=None, p99_ttft_s=None)


def report(requests: int, p99: float | None = 2.0, errors: int = 0) -> dict:
    ok = requests - errors
    return {"requests": requests, "status_counts": {"200": ok, "503": errors},
            "latency_s": latency(p99, ok)}


def _check(reports, name):
    return next(c for c in slo_checks(SLO, reports) if c.name == name)


def test_a_p99_of_fewer_than_100_values_in_all_runs_never_passes():
    few = _check([report(16, p99=2.0 + i / 10) for i in range(5)], "p99 latency (s)")
    assert few.estimate.hi < SLO.p99_latency_s and few.status == UNDECIDED and not few.can_pass
    assert "80 values in 5 runs" in few.note and "cannot pass" in few.note
    assert not few.fails("estimate") and few.fails("fail")   # gate.undecided settles it, as any undecided term
    v = Verdict("chat", (few,), {}, 5)
    assert v.undecided and not v.open   # no number of replications can pass it: the gate adds none
    assert "cannot pass at any number of replications (fewer than 100 values in all runs" in v.warnings()[0]
    # it can still fail, and 100 values in all runs pass
    assert _check([report(16, p99=20.0 + i / 10) for i in range(5)], "p99 latency (s)").status == FAIL
    enough = _check([report(MIN_P99_VALUES // 5, p99=2.0 + i / 10) for i in range(5)], "p99 latency (s)")
    assert enough.status == PASS and not enough.note


def test_runs_without_a_successful_request_are_counted_in_the_note():
    check = _check([report(500)] * 3 + [report(500, errors=500)] * 2, "p99 latency (s)")
    assert check.estimate.replications == 3
    assert check.note == "2 of 5 runs had no successful request: left out"


def test_a_rate_with_no_event_in_any_run_says_what_its_bound_assumes():
    clean = _check([report(10_000)] * 5, "error rate")
    assert clean.status == PASS and clean.note == "none in 5 runs: bound assumes independent requests"
    assert "bound assumes independent requests" in clean.describe("chat")
    assert not _check([report(10_000)] * 4 + [report(10_000, errors=3)], "error rate").note


def _dev(**gate_keys):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["gate"] = {"scenarios": ["steady"], **gate_keys}
    return project, values


def test_the_gate_adds_no_replications_for_a_p99_that_cannot_pass():
    # ~24 requests per run; max 4: the rates decide at the last look (interim ones are at 99.73 %), on 96 values
    project, values = _dev(durationS=60, replications={"min": 2, "max": 4})
    [v] = gate.check_stack(parse_stack_config(values, project, "dev"))
    [p99] = [c for c in v.checks if c.name == "p99 latency (s)"]
    assert not p99.can_pass and p99.status == UNDECIDED and p99.estimate.hi < 60   # a pass under the old rule
    # the rates need 4 replications of ~30 requests to pass; then nothing more replications could decide is left
    assert v.replications == 4 and all(c.status == PASS for c in v.checks if c is not p99) and not v.open
    assert v.passed and "fewer than 100 values in all runs" in gate.gate_warnings([v])[0]   # its estimate meets


def test_a_budget_too_small_for_the_cold_start_term_is_refused_under_undecided_fail():
    project, values = stack_config_values("prod")
    values = project_values(values, project)    # chat declares maxColdStartS
    values["gate"] = {"undecided": "fail", "replications": {"min": 4, "max": 16}}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, "prod")
    [problem] = err.value.problems
    assert problem.path == "kserve-preflight:gate.replications.max" and problem.value == 16
    assert "expected at least 17 under gate.undecided: fail" in problem.allowed and "(chat)" in problem.allowed
    # the controls: a budget of 17, or the default policy (the term then passes with a warning at best)
    values["gate"]["replications"]["max"] = 17
    assert parse_stack_config(values, project, "prod").gate.max_replications == 17
    values["gate"] = {"replications": {"min": 4, "max": 16}}
    assert parse_stack_config(values, project, "prod").gate.undecided == "estimate"

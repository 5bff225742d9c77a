"""A rate limit no number of replications within gate.replications.max can pass (0, or one below the lowest upper
end error-free runs reach: simulation.estimates.lowest_rate_upper) is marked as such (`Check.can_pass` false,
a note naming a limit that could pass), gets no replications added, and is refused at load under
gate.undecided: fail (review rev9-stats finding 4). Before, it ran to max every time and failed with zero errors
under `fail`, with advice to raise gate.replications.max."""

from __future__ import annotations

import pytest

import gate
from gate.verdict import PASS, UNDECIDED, Verdict, rate_check
from preflight.advice import next_steps
from simulation.analytic import zero_event_trials
from simulation.estimates import lowest_rate_upper, passable_rate_limit, rate_interval
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError


def report(requests: int, errors: int = 0) -> dict:
    return {"requests": requests, "status_counts": {"200": requests - errors, "503": errors}}


def test_the_bound_is_the_lowest_upper_end_rate_interval_gives():
    assert lowest_rate_upper(20_000) == rate_interval([(0, 1000)] * 20).hi
    for counts in ([(1, 1000)] + [(0, 1000)] * 19, [(0, 500), (0, 1500)] * 10):   # an event, or unequal runs
        assert rate_interval(counts).hi >= lowest_rate_upper(20_000)
    assert lowest_rate_upper(0) == 1.0
    for n in (3, 450 * 20, 40_000, 10**7):     # rounded up: the suggested limit passes, and is the round one
        assert lowest_rate_upper(n) <= passable_rate_limit(n) < lowest_rate_upper(n) * 1.1


@pytest.mark.parametrize("limit", [0.0, 1e-5, 1.5e-4])
def test_a_limit_below_what_max_error_free_runs_reach_cannot_pass(limit):
    check = rate_check("error rate", limit, [report(1000)] * 5, max_replications=20)
    assert not check.can_pass and check.status == UNDECIDED
    assert f"a limit of {passable_rate_limit(20_000):g} could pass" in check.note
    assert "20 event-free runs of ≈ 1,000 requests" in check.why_not
    assert not Verdict("chat", (check,), {}, 5).open            # the gate adds no replications for it
    # what the note names does pass at max, and just under the bound it cannot
    assert rate_check("error rate", passable_rate_limit(20_000), [report(1000)] * 20, 20).status == PASS
    assert not rate_check("error rate", lowest_rate_upper(20_000) * 0.999, [report(1000)] * 20, 20).can_pass
    if limit > 0:   # how many runs it would take instead
        assert f"or about {-(-zero_event_trials(limit) // 1000)} runs" in check.note


def test_a_limit_within_reach_stays_open_until_max():
    check = rate_check("error rate", 2e-4, [report(1000)] * 5, max_replications=20)   # bound at 20 runs: 1.84e-4
    assert check.can_pass and check.status == UNDECIDED and "cannot pass" not in check.note
    assert Verdict("chat", (check,), {}, 5).open
    assert not rate_check("error rate", 2e-4, [report(1000)] * 5, max_replications=10).can_pass   # 3.7e-4 at 10


def test_the_runs_still_to_come_count_as_large_as_the_largest_seen():
    # seen 1000 + 4 × 250 requests; 15 more runs of up to 1000: 17,000, bound 2.17e-4 — a limit of 2.2e-4 can pass
    runs = [report(1000)] + [report(250)] * 4
    assert rate_check("error rate", 2.2e-4, runs, max_replications=20).can_pass
    assert not rate_check("error rate", 2.1e-4, runs, max_replications=20).can_pass


def _dev(limit: float, **gate_keys):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["services"][0]["slo"]["maxErrorRate"] = limit
    values["gate"] = {"scenarios": ["steady"], **gate_keys}
    return parse_stack_config(values, project, "dev")


def test_the_gate_stops_at_min_and_warns_without_asking_for_more_replications():
    cfg = _dev(0.0)
    [v] = gate.check_stack(cfg)
    [err] = [c for c in v.checks if c.name == "error rate"]
    assert v.replications == 5 and not err.can_pass and err.observed == 0       # the old gate ran 20
    [warning] = gate.gate_warnings([v])
    assert "cannot pass at any number of replications" in warning and "gate.replications.max)" not in warning
    advice = "\n".join(next_steps(cfg, [v], v.passed, values={}))
    assert "raise gate.replications.max" not in advice and "undecided after" not in advice
    assert "no number of replications can pass them: chat error rate: limit 0 is below" in advice
    assert "a limit of 0.00041 could pass" in advice     # dev: ≈ 460 requests per run


@pytest.mark.parametrize("limit", [0.0, 1e-5])
def test_a_rate_limit_that_cannot_pass_is_refused_at_load_under_undecided_fail(limit):
    with pytest.raises(InputError) as err:
        _dev(limit, undecided="fail")
    [problem] = err.value.problems
    assert problem.path == "kserve-preflight:services[0].slo.maxErrorRate" and problem.value == limit
    assert "under gate.undecided: fail" in problem.allowed and "0.00041" in problem.allowed   # dev: ≈ 450 per run
    assert _dev(limit).gate.undecided == "estimate"   # the default policy: accepted; a warning when it runs
    assert _dev(1e-3, undecided="fail").services[0].slo.max_error_rate == 1e-3      # control: within reach


def test_a_zero_rate_in_a_stress_scenario_is_refused_under_undecided_fail():
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["services"][0]["stress"] = {"nodeLoss": {"slo": {"max503Rate": 0}}}
    values["gate"] = {"undecided": "fail"}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, "dev")
    assert [p.path for p in err.value.problems] == ["kserve-preflight:services[0].stress.nodeLoss.slo.max503Rate"]
    values["gate"] = {"undecided": "fail", "scenarios": ["steady", "spike"]}   # control: no node loss run
    assert parse_stack_config(values, project, "dev").gate.scenarios == ("steady", "spike")


def test_two_runs_with_errors_say_why_they_seldom_decide():
    """gate.replications.max 2: the rate interval has 1 degree of freedom (t 12.7), so 30 errors in one of the two
    runs leave an upper end near 1 against a 5 % limit; the note says so and names the setting. Error-free runs,
    and 5 runs with the same errors, get no such note."""
    runs = [report(2000, 30), report(2000)]
    check = rate_check("error rate", 0.05, runs, max_replications=2)
    assert check.status == UNDECIDED and check.ci95[1] > 0.5 and check.can_pass
    assert "2 runs: its interval has 1 degree of freedom (Student t 12.7)" in check.note
    assert "gate.replications.max of 5 or more" in check.note
    assert "degree of freedom" not in rate_check("error rate", 0.05, [report(2000)] * 2, max_replications=2).note
    five = rate_check("error rate", 0.05, runs + [report(2000)] * 3, max_replications=5)
    assert "degree of freedom" not in five.note and five.status == PASS

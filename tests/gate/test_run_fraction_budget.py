"""A run-fraction term (maxColdStartS, the rollout stall fraction) passes only from COLD_START_RUNS_TO_PASS clean
runs: with `gate.replications.max` below that it can never pass, so it is marked (`Check.can_pass` false, the
reason named) and the gate adds no replications for it — before, it ran to max for nothing."""

from __future__ import annotations

from gate.verdict import PASS, UNDECIDED, Verdict, cold_start_check, rollout_check
from stackconfig.platform import COLD_START_RUNS_TO_PASS


def cold(max_s: float) -> dict:
    return {"cold_start_s": {"max": max_s}}


def rolled(ready_s: float) -> dict:
    return {"rollout": {"ready_s": ready_s}}


def test_below_the_runs_a_clean_pass_needs_the_terms_cannot_pass():
    few = COLD_START_RUNS_TO_PASS - 1
    for check in (cold_start_check(300, [cold(50)] * 5, max_replications=few),
                  rollout_check([rolled(100)] * 5, 600, max_replications=few)):
        assert not check.can_pass and check.status == UNDECIDED
        assert f"gate.replications.max is {few}" in check.why_not
        assert not Verdict("chat", (check,), {}, 5).open          # the gate adds no replications for it


def test_with_enough_budget_they_stay_open_and_pass_when_clean():
    n = COLD_START_RUNS_TO_PASS
    for make, clean in ((lambda reps, m: cold_start_check(300, reps, m), cold(50)),
                        (lambda reps, m: rollout_check(reps, 600, m), rolled(100))):
        check = make([clean] * 5, n)
        assert check.can_pass and check.status == UNDECIDED and not check.why_not
        assert Verdict("chat", (check,), {}, 5).open
        assert make([clean] * n, n).status == PASS
        assert make([clean] * 5, None).can_pass                      # no budget given: as before

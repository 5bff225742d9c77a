"""A p99 term of fewer than MIN_P99_VALUES values in all runs cannot pass (more replications may bring it there:
then the gate adds them), and its point estimate runs low,
so `gate.undecided: estimate` settles it on its interval's upper end: it
passes with a warning only when even that meets the SLO. The advice after a pass names why it cannot pass and
what would let it (a longer gate.durationS), never "raise gate.replications.max" (review rev9-stats finding 5)."""

from __future__ import annotations

from p99_runs import latency
from gate.verdict import UNDECIDED, Check, Verdict, slo_checks
from preflight.advice import next_steps
from simulation.estimates import Estimate
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import Slo, parse_stack_config

SLO = Slo(p99_latency_s=9.0, max_error_rate=0.01, max_503_rate=0.01, max_cold_start_s=None, p99_ttft_s=None)


def report(p99: float, values: int = 16) -> dict:   # 5 runs: 80 values in all
    return {"requests": values, "status_counts": {"200": values}, "latency_s": latency(p99, values)}


def p99(p99s: list[float], max_replications: int = 5) -> Check:   # default: the last look, 80 values at most
    return next(c for c in slo_checks(SLO, [report(x) for x in p99s], max_replications)
                if c.name == "p99 latency (s)")


def test_under_estimate_a_few_values_p99_is_settled_on_its_upper_end():
    check = p99([5.0, 6.0, 7.0, 8.0, 8.5])       # the pooled estimate meets 9; the interval reaches past it
    assert check.status == UNDECIDED and not check.can_pass and check.observed <= 9.0 < check.estimate.hi
    assert check.fails("estimate") and not check.fails("warn") and check.fails("fail")   # the old rule passed it
    v = Verdict("chat", (check,), {}, 5)
    assert not v.passed and "its interval's upper end misses the SLO, and its estimate runs low" in v.misses()[0]


def test_under_estimate_it_passes_with_a_warning_when_even_the_upper_end_meets():
    check = p99([5.0, 5.5, 6.0, 6.5, 7.0])
    assert check.estimate.hi <= 9.0 and not check.fails("estimate")
    [warning] = Verdict("chat", (check,), {}, 5).warnings()
    assert "cannot pass at any number of replications (fewer than 100 values in all runs, 80 in " \
           "gate.replications.max runs: a longer gate.durationS or a larger gate.replications.max" in warning
    assert "even its interval's upper end meets the SLO" in warning


def test_a_term_with_enough_values_is_still_settled_on_its_estimate():
    check = next(c for c in slo_checks(SLO, [report(x, 500) for x in [5.0, 6.0, 7.0, 8.0, 10.0]], 20)
                 if c.name == "p99 latency (s)")
    assert check.can_pass and check.status == UNDECIDED and not check.fails("estimate")


def test_a_p99_that_more_replications_bring_to_100_values_stays_open_until_they_do():
    """The values are pooled, so their number grows with the replications: 5 runs of 16 (80 values) of
    gate.replications.max 20 cannot pass yet, but 20 such runs could, so the gate adds replications for it rather
    than settling it as a term no number of replications can pass; at 7 of them (112 values) it can pass."""
    low = [5.0, 5.5, 6.0, 6.5, 7.0]
    early = p99(low, max_replications=20)
    assert early.can_pass and early.biased_low and early.status == UNDECIDED and early.estimate.hi <= 9.0
    assert "cannot pass yet (more replications give it more values)" in early.note and not early.why_not
    assert Verdict("chat", (early,), {}, 5).open == [early]   # the gate adds replications for it
    assert early.fails("estimate") is False   # were it settled now, on its upper end, as a term of few values
    enough = p99(low + [6.0, 6.5], max_replications=7)   # 112 values at the last look
    assert enough.can_pass and not enough.biased_low and enough.status == "pass"
    assert not p99(low, max_replications=6).can_pass   # 6 runs of at most 16: 96 values, never 100


def _cfg():
    project, values = stack_config_values("dev")
    return parse_stack_config(project_values(values, project), project, "dev")


def test_the_advice_after_a_pass_says_why_a_term_cannot_pass_and_counts_the_verdicts_own_replications():
    few = Verdict("chat", (p99([5.0, 5.5, 6.0, 6.5, 7.0]),), {}, 5)
    lines = "\n".join(next_steps(_cfg(), [few], True, values={}))
    assert "no number of replications can pass them: chat p99 latency (s): fewer than 100 values in all runs, 80 " \
           "in gate.replications.max runs: a longer gate.durationS or a larger gate.replications.max gives more" \
           in lines
    assert "raise gate.replications.max" not in lines and "undecided after" not in lines
    edge = Verdict("chat", (Check("p99 latency (s)", Estimate(8.9, 8.5, 9.3, 8), 9.0),), {}, 8, "spike")
    lines = "\n".join(next_steps(_cfg(), [edge], True, values={}))   # the budget of the run, not the file's 20
    assert "undecided after 8 replications (gate.replications.max): chat [spike]; raise gate.replications.max" in lines


def test_reports_without_tails_are_held_to_100_values_per_run():
    """rev14-diff F6: reports with no values to pool (not the simulator's) fall back to the mean of the runs'
    own p99s, whose bias more runs do not shrink; 5 runs of 30 values passed on the pooled count."""
    import numpy as np

    from gate.verdict import p99_check

    rng = np.random.default_rng(0)
    reports = []
    for _ in range(5):
        v = rng.exponential(0.1, 30)
        reports.append({"latency_s": {"count": 30, "p99": float(np.percentile(v, 99, method="median_unbiased"))}})
    check = p99_check("p99 latency (s)", 10.0, reports, 20)
    assert not check.can_pass and check.status != "pass" and "values per run" in check.why_not

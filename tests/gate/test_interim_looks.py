"""Haybittle–Peto looks (review rev13-stats finding 2): at an interim look (fewer replications than
gate.replications.max) a p99 or rate term decides only on its INTERIM_LEVEL (99.73 %) interval; the last look
decides on the 95 % one. Three looks at 95 % each passed a term exactly at its limit 5.9 % of the time with normal
per-run figures and 12–17 % with the simulator's skewed ones; with the strict interim looks a term at its limit
passes about as often as one 95 % look allows."""

from __future__ import annotations

import numpy as np

from p99_runs import latency
from gate.verdict import INTERIM_LEVEL, PASS, UNDECIDED, Verdict, slo_checks
from stackconfig.schema import Slo

SLO = Slo(p99_latency_s=9.0, max_error_rate=0.5, max_503_rate=0.02, max_cold_start_s=None, p99_ttft_s=None)


def report(p99: float = 5.0, requests: int = 2000, errors: int = 0) -> dict:
    return {"requests": requests, "status_counts": {"200": requests - errors, "503": errors},
            "latency_s": latency(p99, 500)}


def _check(reports, name, max_replications):
    return next(c for c in slo_checks(SLO, reports, max_replications) if c.name == name)


def test_an_interim_look_decides_on_the_strict_interval_and_the_last_on_95_percent():
    reports = [report(p) for p in (7.0, 7.6, 8.0, 8.3, 7.4)]
    final = _check(reports, "p99 latency (s)", 5)           # 5 of max 5: the last look
    interim = _check(reports, "p99 latency (s)", 20)        # 5 of max 20: an interim look
    assert final.status == PASS and final.estimate.hi <= SLO.p99_latency_s
    assert interim.status == UNDECIDED and interim.interim.hi > SLO.p99_latency_s >= interim.estimate.hi
    assert interim.estimate == final.estimate   # the 95 % interval is the one reported
    assert Verdict("chat", (interim,), {}, 5).open   # so the gate adds replications for it
    assert INTERIM_LEVEL > 0.99


def test_a_rate_term_exactly_at_its_limit_rarely_passes_over_three_looks():
    """503 rate at exactly its limit (2 %), per-run counts over-dispersed (a run's rate varies): looks at 5, 10 and
    20 replications through slo_checks. 95 % at every look passed it ~6 %; the strict interim looks ~2.5 %."""
    rng = np.random.default_rng(4)
    passes, gates = 0, 800
    for _ in range(gates):
        p = np.clip(rng.normal(0.02, 0.006, 20), 0.0, 1.0)
        runs = [{"requests": 2000, "status_counts": {"200": 2000 - k, "503": int(k)}, "latency_s": {}}
                for k in rng.binomial(2000, p)]
        for r in (5, 10, 20):
            c = _check(runs[:r], "503 rate", 20)
            if c.status != UNDECIDED:
                passes += c.status == PASS
                break
    assert passes / gates < 0.04, passes / gates


def test_a_p99_of_reports_without_values_to_pool_is_also_held_to_the_strict_interval():
    """Reports that carry a run's p99 but not its values (not the simulator's: no "tail") fall back to the mean of
    the runs' p99s; an interim look holds that to its INTERIM_LEVEL interval too, as every p99 and rate term."""
    reports = [{"requests": 2000, "status_counts": {"200": 2000},
                "latency_s": {"p99": p, "count": 500}} for p in (7.0, 7.6, 8.0, 8.3, 7.4)]
    final, interim = _check(reports, "p99 latency (s)", 5), _check(reports, "p99 latency (s)", 20)
    assert final.status == PASS and interim.status == UNDECIDED
    assert interim.interim.lo < interim.estimate.lo and interim.interim.hi > SLO.p99_latency_s >= interim.estimate.hi


def test_two_runs_far_apart_at_an_interim_look_are_undecided_not_an_overflow():
    """rev14 review finding 1 (gate.replications.min: 2): the strict interval on one degree of freedom (t ≈ 236)
    put the log-scale upper end past math.exp's range when the two runs' p99s differ ~400-fold (one run with
    requests behind a cold start): OverflowError. It is unbounded: the term stays open for more replications."""
    from simulation.quantiles import summary_of

    rng = np.random.default_rng(5)
    warm = rng.exponential(0.02, 500)
    cold = np.concatenate([rng.exponential(0.02, 490), np.full(10, 60.0)])
    reports = [{"requests": 500, "status_counts": {"200": 500}, "latency_s": summary_of(v)} for v in (warm, cold)]
    check = _check(reports, "p99 latency (s)", 20)
    assert check.status == UNDECIDED and check.interim.hi == float("inf")


def test_a_term_that_cannot_pass_is_held_to_the_strict_interval_at_an_interim_look_too():
    """rev14-diff F3: a rate limit below what max runs can reach cannot pass, but another term may keep its
    scenario open and look again; it failed on its 95 % interval at every interim look."""
    from gate.verdict import _interim, rate_check

    reports = [{"requests": 100, "status_counts": {"200": 99, "500": 1}} for _ in range(5)]
    check = _interim(rate_check("error rate", 0.0012, reports, 20), reports, True)
    assert not check.can_pass and check.estimate.lo > 0.0012 >= check.interim.lo
    assert check.status == UNDECIDED

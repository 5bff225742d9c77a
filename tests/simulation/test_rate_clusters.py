"""The rate interval on errors that come in bursts: a queue-full episode refuses several arrivals in a row, so a
few runs hold most of a rare error (simulation.estimates.rate_interval, Korn & Graubard's term)."""

from __future__ import annotations

import random
from statistics import NormalDist

import pytest

from bursts import bursts
from simulation.analytic import clopper_pearson, t975
from simulation.estimates import rate_interval

REQUESTS = 1800   # per run, as a 3,000-s M/M/1/11 run at λ = 0.6


def _bursty_runs(rng: random.Random, runs: int, bursts_per_run: float, mean_burst: float) -> list[tuple[int, int]]:
    """(errors, requests) of each run: Poisson(bursts_per_run) bursts per run, each refusing a geometric number
    (≥ 1, mean `mean_burst`) of requests."""
    return [(bursts(rng, bursts_per_run, mean_burst), REQUESTS) for _ in range(runs)]


@pytest.mark.parametrize("bursts_per_run, mean_burst", [(2.0, 3.0), (1.0, 4.0)])
def test_five_runs_of_a_bursty_rate_seldom_put_the_interval_below_it(bursts_per_run, mean_burst):
    """The gate's first look (5 runs) at a rate made of bursts: how often the 95 % interval lies wholly below the
    true rate (the error that passes a service at its limit; nominal 2.5 %). Sets with no error at all are the
    documented zero-event limitation and left out (0 and 0.9 % of the sets). Ratio estimator ∪ Clopper–Pearson
    alone: 8.5 % and 11.5 %; with Korn–Graubard's term 2.8 % and 3.9 % (± 0.3 % at 4,000 sets). What is left
    is mostly one small burst in five runs, which no interval can tell from one of a large burst."""
    rng = random.Random(7)
    truth = bursts_per_run * mean_burst / REQUESTS
    sets = [_bursty_runs(rng, 5, bursts_per_run, mean_burst) for _ in range(4000)]
    with_errors = [s for s in sets if any(k for k, _ in s)]
    below = sum(rate_interval(s).hi < truth for s in with_errors) / len(with_errors)
    assert below <= 0.05, below


def test_effective_trials_are_capped_at_the_real_ones_before_the_degrees_of_freedom_factor():
    """Korn & Graubard cap n* = p̂(1 − p̂)/v̂ at Σn, then shrink it by (z/t_{R−1})² (0.4983 at 5 runs): runs
    that agree, or spread less than independent requests would be, get Clopper–Pearson on that share of their
    requests; one run holding every error gets far fewer effective trials."""
    factor = (NormalDist().inv_cdf(0.975) / t975(4)) ** 2
    cp = clopper_pearson(25 * factor, 5000 * factor)      # 25 of 5,000, on 2,491.66 effective trials
    for counts in ([(5, 1000)] * 5, [(5, 1000), (6, 1000), (4, 1000), (5, 1000), (5, 1000)]):
        e = rate_interval(counts)
        assert (e.lo, e.hi) == pytest.approx(cp, rel=1e-9)
    assert cp == pytest.approx((0.00262325, 0.00863082), abs=5e-9)   # scipy.stats.beta.ppf, as in the docstring
    one_run = rate_interval([(25, 1000)] + [(0, 1000)] * 4)
    assert one_run.value == e.value and one_run.hi > 2 * cp[1]

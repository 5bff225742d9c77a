"""Clopper–Pearson exact binomial intervals without scipy (simulation/analytic.py): the incomplete beta function
and its quantile against published values, and the interval's guarantee — each end's error at most 2.5 % for
every p — which Wilson's score interval, used before, does not keep at the gate's small n."""

from __future__ import annotations

import math

import pytest

from simulation.analytic import beta_cdf, beta_quantile, clopper_pearson, zero_event_trials

# (k, n) → (lower, upper) 95 %: scipy.stats.beta.ppf(0.025, k, n − k + 1), ppf(0.975, k + 1, n − k)
KNOWN = {
    (3, 5): (0.14663279963467313, 0.9472550494736831),
    (1, 10): (0.0025285785444617848, 0.4450161170281954),
    (5, 20): (0.08657146910143461, 0.49104587170795744),
    (0, 20): (0.0, 0.1684334709830853),
    (10, 50_000): (9.591180679505863e-05, 0.000367776260819087),
    (300, 200_000): (0.0013351531953836955, 0.0016795546549434272),
    (20, 20): (0.8315665290169147, 1.0),
}


@pytest.mark.parametrize("k, n", list(KNOWN))
def test_bounds_match_the_beta_quantiles(k, n):
    lo, hi = clopper_pearson(k, n)
    assert lo == pytest.approx(KNOWN[k, n][0], rel=1e-10, abs=1e-300)
    assert hi == pytest.approx(KNOWN[k, n][1], rel=1e-10)


def test_the_incomplete_beta_function_and_its_quantile():
    assert beta_cdf(0.5, 2, 3) == pytest.approx(0.6875, rel=1e-14)             # 11/16
    assert beta_cdf(0.3, 0.5, 0.5) == pytest.approx(2 / math.pi * math.asin(math.sqrt(0.3)), rel=1e-12)  # arcsine
    assert beta_cdf(0.25, 30, 70) == pytest.approx(0.1358149042834277, rel=1e-10)
    assert beta_quantile(0.9, 2.5, 7.5) == pytest.approx(0.4310663325142472, rel=1e-10)
    assert beta_cdf(0.0, 2, 3) == 0.0 and beta_cdf(1.0, 2, 3) == 1.0


def test_huge_counts_keep_their_precision():
    # 1 of 40 million and 3 of a billion requests (mpmath, 50 digits): the upper ends
    assert clopper_pearson(1, 40_000_000)[1] == pytest.approx(1.3929107681360814e-07, rel=1e-9)
    assert clopper_pearson(3, 10**9)[1] == pytest.approx(8.767273044460697e-09, rel=1e-8)
    assert clopper_pearson(0, 10**9)[1] == pytest.approx(-math.expm1(math.log(0.025) / 1e9), rel=1e-14)


def _binom_tail(k: int, n: int, p: float, upper: bool) -> float:
    """P(X ≥ k) (upper) or P(X ≤ k) for X ~ Binomial(n, p)."""
    terms = range(k, n + 1) if upper else range(0, k + 1)
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in terms)


@pytest.mark.parametrize("n", [5, 10, 20])
def test_each_end_is_where_a_binomial_tail_is_2_5_percent(n):
    for k in range(n + 1):
        lo, hi = clopper_pearson(k, n)
        if k:
            assert _binom_tail(k, n, lo, upper=True) == pytest.approx(0.025, rel=1e-9)
        if k < n:
            assert _binom_tail(k, n, hi, upper=False) == pytest.approx(0.025, rel=1e-9)


def test_three_of_five_is_not_proof_of_more_than_one_in_five():
    # Wilson's lower end for 3 of 5 is 0.231 > 0.2, so it called "more than 1 run in 5" although a true 0.2
    # gives 3 or more of 5 with probability 5.8 %; Clopper–Pearson's lower end is 0.147
    assert _binom_tail(3, 5, 0.2, upper=True) == pytest.approx(0.05792)
    assert clopper_pearson(3, 5)[0] < 0.2 < clopper_pearson(4, 5)[0]


@pytest.mark.parametrize("n", [5, 10, 20])
def test_the_interval_covers_every_p_at_least_95_percent_of_the_time(n):
    for p in [i / 200 for i in range(1, 200)]:
        cover = sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k)
                    for k in range(n + 1) if clopper_pearson(k, n)[0] <= p <= clopper_pearson(k, n)[1])
        assert cover >= 0.95 - 1e-12, (n, p, cover)


def test_zero_event_trials():
    assert zero_event_trials(0.2) == 17                  # 0 of 16: upper end 0.206; 0 of 17: 0.195
    assert clopper_pearson(0, 16)[1] > 0.2 >= clopper_pearson(0, 17)[1]
    assert zero_event_trials(0.01) == 368 and zero_event_trials(0.2, level=0.99) == 24
    assert clopper_pearson(0, 0) == (0.0, 1.0)

"""The replication intervals (simulation/estimates.py) against values worked out by hand, with Student t quantiles
from a t table (t(0.975, df); scipy.stats.t.ppf(0.975, df) gives the same digits), not from `t975`:

    df = 1: 12.7062047   df = 2: 4.3026527   df = 4: 2.7764451   df = 6: 2.4469119

A Monte Carlo coverage test cannot see a missing Bessel correction or a df off by one (at R = 5 those cover 93.2 %
and 93.8 %, inside the ±1.5 % a 2000-trial test must allow); these fix the interval to the digit, and the exact
coverage test below computes what a sample's interval covers from the t distribution's closed forms."""

from __future__ import annotations

import math
import random

import pytest

from simulation.analytic import t975
from simulation.estimates import independent_difference, mean_interval, rate_interval

T975 = {1: 12.7062047362, 2: 4.3026527297, 4: 2.7764451052, 6: 2.4469118511}   # t table, 0.975, by df


@pytest.mark.parametrize("df", sorted(T975))
def test_t975_is_the_table_value(df):
    assert t975(df) == pytest.approx(T975[df], abs=1e-9)


def test_mean_interval_is_student_t_with_r_minus_1_df_and_the_sample_sd():
    e = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    # mean 3; s² = (4 + 1 + 0 + 1 + 4) / (5 − 1) = 2.5 (Bessel); df = 4, t = 2.7764451;
    # h = 2.7764451 · √(2.5 / 5) = 2.7764451 · 0.7071068 = 1.9632432 → [1.0367568, 4.9632432]
    assert (e.value, e.lo, e.hi, e.replications) == pytest.approx((3.0, 1.0367568385, 4.9632431615, 5), abs=1e-9)


def test_mean_interval_of_two_values():
    e = mean_interval([2.0, 4.0])
    # mean 3; s² = (1 + 1) / 1 = 2; df = 1, t = 12.7062047; h = 12.7062047 · √(2 / 2) = 12.7062047;
    # the lower end −9.7062 is clipped to the metric's range (0 by default)
    assert (e.value, e.lo, e.hi) == pytest.approx((3.0, 0.0, 15.7062047362), abs=1e-9)


# The t distribution's CDF in closed form for 1–4 degrees of freedom (Abramowitz & Stegun 26.7.3/26.7.4):
T_CDF = {
    1: lambda x: 0.5 + math.atan(x) / math.pi,
    2: lambda x: 0.5 + x / (2 * math.sqrt(2 + x * x)),
    3: lambda x: 0.5 + (x / (math.sqrt(3) * (1 + x * x / 3)) + math.atan(x / math.sqrt(3))) / math.pi,
    4: lambda x: 0.5 + 3 / 8 * x / math.sqrt(1 + x * x / 4) * (1 - x * x / (12 * (1 + x * x / 4))),
}


@pytest.mark.parametrize("r", [2, 3, 4, 5])
def test_mean_interval_covers_a_normal_mean_exactly_95_percent(r):
    """For R normal values, (x̄ − μ) / (s / √R) with the sample sd s (divisor R − 1) is Student t with R − 1
    df, whatever μ and σ. An interval x̄ ± c · s / √R therefore covers μ with probability 2 F(c) − 1 exactly:
    read c off each sample's interval and the coverage follows, no Monte Carlo needed. (An sd over R, or R df, gives
    93.2 % or 93.8 % at R = 5.)"""
    rng = random.Random(r)
    for _ in range(20):
        values = [rng.gauss(10.0, 3.0) for _ in range(r)]
        m = sum(values) / r
        s = math.sqrt(sum((v - m) ** 2 for v in values) / (r - 1))
        e = mean_interval(values, lower=-math.inf)
        c = (e.hi - m) / (s / math.sqrt(r))
        assert (m - e.lo) / (s / math.sqrt(r)) == pytest.approx(c, rel=1e-12)        # symmetric about x̄
        assert 2 * T_CDF[r - 1](c) - 1 == pytest.approx(0.95, abs=1e-9)


def test_rate_interval_t_term_uses_r_minus_1_and_is_widened_past_clopper_pearson():
    e = rate_interval([(40, 1000), (60, 1000), (50, 1000)])
    # k = 40, 60, 50 of 1000 each: p = 150 / 3000 = 0.05; residuals k − p·n = −10, 10, 0; their variance
    # (100 + 100 + 0) / (3 − 1) = 100; h = t(2) · √(100 / 3) / n̄ = 4.3026527 · 5.7735027 / 1000 = 0.0248414
    # → lo = 0.05 − 0.0248414 = 0.0251586, below Clopper–Pearson's 150 of 3000 (0.0424766) and Korn–Graubard's
    # (0.0281162, below). The upper end is Korn–Graubard's: the ratio estimator's variance v = 100 / 3 / 1000²,
    # n* = p(1 − p) / v · (z / t(2))² = 1425 · (1.9599640 / 4.3026527)² = 295.6912382 effective trials;
    # scipy.stats.beta.ppf(0.975, p·n* + 1, n* − p·n*) = 0.0814035 (the t-term's upper end: 0.0748414)
    assert (e.value, e.lo, e.hi, e.replications) == pytest.approx((0.05, 0.0251586229, 0.0814034560, 3), abs=1e-9)


def test_rate_interval_from_two_replications_has_one_degree_of_freedom():
    e = rate_interval([(0, 100), (4, 100)])
    # p = 4 / 200 = 0.02; residuals −2, 2; variance (4 + 4) / (2 − 1) = 8; h = t(1) · √(8 / 2) / 100
    # = 12.7062047 · 2 / 100 = 0.2541241 → the t-term's hi = 0.2741241 (Clopper–Pearson's 4 of 200 alone:
    # 0.0504). One degree of freedom leaves Korn–Graubard ≈ 1.17 effective trials (n* = 0.0196 / (8 / 2 / 100²)
    # · (1.9599640 / 12.7062047)² = 1.1658980): scipy.stats.beta.ppf(0.975, 1.0233180, 1.1425800) = 0.9612290
    assert (e.value, e.lo, e.hi, e.replications) == pytest.approx((0.02, 0.0, 0.9612290263, 2), abs=1e-9)


def test_rate_interval_whose_runs_agree_is_clopper_pearson_on_fewer_effective_trials():
    e = rate_interval([(5, 100), (5, 100), (5, 100), (5, 100)])
    # residuals all 0: the t-term is 0; Korn–Graubard's effective trials are all 400, times (z / t(3))² =
    # (1.9599640 / 3.1824463)² = 0.3792923 for the 3 degrees of freedom: Clopper–Pearson on 7.5858458 of
    # 151.7169151 (scipy.stats.beta.ppf(0.025, 7.5858458, 145.1310693), ppf(0.975, 8.5858458, 144.1310693)) =
    # (0.0212403, 0.0977497), around Clopper–Pearson's for 20 of 400 (0.0308052, 0.0761670)
    assert (e.value, e.lo, e.hi) == pytest.approx((0.05, 0.0212403, 0.0977497), abs=5e-7)


def test_welch_interval_for_whatif_runs_on_different_seeds():
    e = independent_difference([1, 2, 3, 4, 5], [2, 4, 6, 8, 10, 12])
    # before 1..5: mean 3, s² = 10 / 4 = 2.5, its mean's variance vb = 2.5 / 5 = 0.5
    # after 2, 4, .., 12: mean 7, s² = (25 + 9 + 1 + 1 + 9 + 25) / 5 = 14, va = 14 / 6 = 2.3333333
    # se = √(2.3333333 + 0.5) = √(17 / 6) = 1.6832508
    # Welch–Satterthwaite df = (17/6)² / ((14/6)² / 5 + 0.5² / 4) = 8.0277778 / (1.0888889 + 0.0625) = 6.97 → 6
    # h = t(6) · se = 2.4469119 · 1.6832508 = 4.1187664 → 4 ± 4.1187664
    assert (e.value, e.lo, e.hi, e.replications) == pytest.approx((4.0, -0.1187663874, 8.1187663874, 5), abs=1e-9)


def test_welch_needs_two_runs_on_each_side():
    for before, after in (([1.0], [2.0, 3.0]), ([1.0, 2.0], [3.0])):
        e = independent_difference(before, after)
        assert e.value is None and e.lo is None and e.replications == 1

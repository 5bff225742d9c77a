"""The what-if's rate difference after − before (simulation.estimates.rate_difference, through
report_terms.difference): MOVER on the two sides' rate intervals with the pairs' correlation."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from bursts import bursts
from simulation.estimates import rate_difference, rate_interval
from simulation.report_terms import difference

REQUESTS = 1800   # per run, as a 3,000-s M/M/1/11 run at λ = 0.6


def _reports(counts: list[int]) -> list[dict]:
    return [{"status_counts": {"503": k, "200": REQUESTS - k}, "requests": REQUESTS} for k in counts]


@pytest.mark.parametrize("shared, extra, size", [(1.0, 1.0, 4.0), (10.0, 1.0, 3.0)])
def test_five_paired_runs_of_a_bursty_rise_seldom_put_the_interval_below_it(shared, extra, size):
    """Common random numbers: both sides share `shared` bursts per run, the after side has `extra` more, so the
    true rise is extra × size / requests. How often the 95 % interval lies wholly below it (nominal 2.5 %): the
    t-interval over the runs' own differences 12.4 % and 12.7 %; MOVER 2.2 % and 3.0 % (3,000 sets)."""
    rng = random.Random(11)
    truth = extra * size / REQUESTS
    below = 0
    for _ in range(3000):
        common = [bursts(rng, shared, size) for _ in range(5)]
        after = [k + bursts(rng, extra, size) for k in common]
        below += difference("503 rate", _reports(common), _reports(after)).hi < truth
    assert below / 3000 <= 0.04, below / 3000


def test_the_ends_recover_each_sides_interval_with_the_pairs_correlation():
    """MOVER (Zou & Donner 2008) by hand: lower = d − √(ℓₐ² + u_b² − 2r·ℓₐu_b), upper = d + √(uₐ² + ℓ_b² −
    2r·uₐℓ_b), r Pearson's correlation of the ratio residuals kᵢ − p̂nᵢ; r = 0 for independent runs."""
    before = [(3, 1000), (0, 1200), (9, 900), (1, 1100), (4, 1000)]
    after = [(5, 1000), (1, 1200), (12, 900), (1, 1100), (8, 1000)]
    eb, ea = rate_interval(before), rate_interval(after)
    d = ea.value - eb.value

    def resid(c):
        p = sum(k for k, _ in c) / sum(n for _, n in c)
        return [k - p * n for k, n in c]

    for paired, r in ((True, statistics.correlation(resid(before), resid(after))), (False, 0.0)):
        la, ua, lb, ub = ea.value - ea.lo, ea.hi - ea.value, eb.value - eb.lo, eb.hi - eb.value
        e = rate_difference(before, after, paired=paired)
        assert e.value == pytest.approx(d, abs=1e-15)
        assert e.lo == pytest.approx(d - math.sqrt(la ** 2 + ub ** 2 - 2 * r * la * ub), rel=1e-12)
        assert e.hi == pytest.approx(d + math.sqrt(ua ** 2 + lb ** 2 - 2 * r * ua * lb), rel=1e-12)
        assert e.replications == 5
    assert 0.9 < statistics.correlation(resid(before), resid(after)) < 1
    # pairing narrows it: the shared part of the runs' spread cancels
    assert rate_difference(before, after).hi - rate_difference(before, after).lo < \
        rate_difference(before, after, paired=False).hi - rate_difference(before, after, paired=False).lo


def test_the_point_is_the_difference_of_the_pooled_rates_each_column_shows():
    before = [(0, 100), (10, 1000)]
    after = [(1, 100), (10, 1000)]
    e = difference("503 rate", [{"status_counts": {"503": k}, "requests": n} for k, n in before],
                   [{"status_counts": {"503": k}, "requests": n} for k, n in after])
    assert e.value == pytest.approx(11 / 1100 - 10 / 1100)     # not the mean of the runs' own differences (0.005)


def test_equal_runs_are_no_evidence_of_no_change():
    """No event on either side, or the same counts in every pair: the interval is not the point 0 (as one rate
    with no event is bounded by Clopper–Pearson, not by 0) and says no detectable change."""
    none = [(0, 2000)] * 5
    e = rate_difference(none, none)
    assert e.value == 0 and e.lo < 0 < e.hi
    assert e.hi == pytest.approx(rate_interval(none).hi)
    same = [(2, 2000), (0, 2000), (7, 2000), (1, 2000), (0, 2000)]
    e = rate_difference(same, same)
    assert e.value == 0 and e.lo < 0 < e.hi


def test_no_runs_on_a_side_give_no_estimate():
    assert rate_difference([], [(1, 10)], paired=False).value is None
    assert rate_difference([(1, 10)], [], paired=True).value is None


def test_pairs_that_move_together_narrow_it_and_level_widens_it():
    """After = before + 4 errors in every run of 2,000 requests: the residuals match (r = 1), so the paired
    interval nets out the runs' shared spread and excludes 0, where independent runs of the same counts do not."""
    before = [(20, 2000), (25, 2000), (18, 2000), (30, 2000), (22, 2000)]
    after = [(k + 4, n) for k, n in before]
    paired, unpaired = rate_difference(before, after), rate_difference(before, after, paired=False)
    assert paired.lo > 0 and unpaired.lo < 0 < unpaired.hi
    assert paired.hi - paired.lo < 0.2 * (unpaired.hi - unpaired.lo)
    strict = rate_difference(before, after, level=0.9973)
    assert strict.lo < paired.lo and strict.hi > paired.hi and strict.value == paired.value


def test_counts_in_proportion_to_trials_do_not_correlate_by_rounding():
    """Residuals of exactly 0 but for float rounding (~1e-16) give r = 0, not a spurious ±1 that would collapse
    the interval (review rev16-mover finding 7)."""
    before = [(3, 300), (6, 600), (9, 900), (12, 1200)]
    after = [(7, 700), (2, 200), (5, 500), (11, 1100)]
    assert rate_difference(before, after) == rate_difference(before, after, paired=False)


def test_it_stays_inside_minus_one_to_one_and_needs_trials_on_both_sides():
    e = rate_difference([(0, 18), (18, 44)], [(1, 10**9), (0, 1)])    # −1 − 2e-16 before clipping
    assert e.lo == -1.0 <= e.value
    assert rate_difference([(0, 0)] * 3, [(5, 1000)] * 3).value is None

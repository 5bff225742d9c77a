"""Property: the rate interval of any replications' (events, requests) counts is a valid interval around Σk/Σn —
no exception, finite, inside [0, 1], containing the pooled Clopper–Pearson interval (simulation.estimates
`rate_interval`, its Korn–Graubard term on non-integer effective counts included)."""

from __future__ import annotations

import math

from hypothesis import given, strategies as st

from fuzz.test_fuzz_inputs import _settings
from simulation.analytic import clopper_pearson
from simulation.estimates import rate_difference, rate_interval


@st.composite
def _runs(draw):
    n = st.one_of(st.integers(1, 50), st.integers(1, 10**9))
    return [(draw(st.integers(0, trials)), trials) for trials in draw(st.lists(n, min_size=1, max_size=40))]


@given(_runs(), st.sampled_from([0.95, 0.9973]))
@_settings(300)
def test_any_counts_give_a_valid_interval_around_the_pooled_rate(counts, level):
    k, n = sum(c for c, _ in counts), sum(t for _, t in counts)
    e = rate_interval(counts, level)
    assert e.value == k / n and e.replications == len(counts)
    assert all(math.isfinite(x) for x in (e.lo, e.hi))
    assert 0.0 <= e.lo <= e.value <= e.hi <= 1.0
    cp_lo, cp_hi = clopper_pearson(k, n, level)
    assert e.lo <= cp_lo + 1e-12 and e.hi >= cp_hi - 1e-12


@given(st.floats(1e-6, 1e12), st.floats(0.0, 1.0), st.sampled_from([0.95, 0.9973]))
@_settings(300)
def test_clopper_pearson_on_effective_counts_is_a_valid_interval(trials, share, level):
    """Korn–Graubard's counts are not whole: any 0 ≤ k ≤ n gives bounds in [0, 1] around k/n (the quantile
    search stays inside (0, 1), where the beta density is defined)."""
    k = trials * share
    lo, hi = clopper_pearson(k, trials, level)
    assert 0.0 <= lo <= k / trials <= hi <= 1.0


@st.composite
def _runs_maybe_empty(draw):
    """Runs with 0 trials too (a run whose measured window saw no request)."""
    n = st.one_of(st.integers(0, 50), st.integers(0, 10**9))
    return [(draw(st.integers(0, trials)), trials) for trials in draw(st.lists(n, min_size=1, max_size=40))]


@given(_runs_maybe_empty(), _runs_maybe_empty(), st.booleans(), st.sampled_from([0.95, 0.9973]))
@_settings(300)
def test_any_two_sides_give_a_valid_difference_interval(before, after, paired, level):
    """`rate_difference` (the what-if's after − before of a rate) on any counts: no exception, finite, around the
    difference of the pooled rates, inside [−1, 1]; paired runs are matched pair by pair (the shorter side); no
    estimate when a side has no trials."""
    e = rate_difference(before, after, paired=paired, level=level)
    if paired:
        before, after = before[:len(after)], after[:len(before)]
    if not sum(n for _, n in before) or not sum(n for _, n in after):
        assert e.value is e.lo is e.hi is None
        return
    d = sum(k for k, _ in after) / sum(n for _, n in after) - sum(k for k, _ in before) / sum(n for _, n in before)
    assert e.value == d and e.replications == min(len(before), len(after))
    assert all(math.isfinite(x) for x in (e.lo, e.hi))
    assert -1.0 <= e.lo <= e.value <= e.hi <= 1.0

"""`simulation run`'s error-rate intervals are around the pooled rate it prints: the batches are pooled with the
ratio estimator (as the gate pools replications), not averaged as unweighted per-batch ratios."""

from __future__ import annotations

import pytest

from simulation.estimates import rate_interval
from simulation.report import _rate


def test_the_interval_is_centred_on_the_pooled_rate_when_batch_sizes_differ():
    """Busy batches full of 429s and quiet batches without: pooled 250/550 = 45 %, the unweighted batch mean 25 %.
    The old interval ([0, 0.63], centred on 0.31) came from the latter; standard-hpa printed 16.28 % [0.95 %,
    17.21 %]."""
    batch_k, batch_n = [50] * 5 + [0] * 5, [100] * 5 + [10] * 5
    out = _rate(250, 550, batch_k, batch_n)
    lo, hi = out["ci95"]
    assert out["rate"] == pytest.approx(250 / 550)
    assert lo < out["rate"] < hi and abs((lo + hi) / 2 - out["rate"]) < 0.1 * (hi - lo)
    est = rate_interval(list(zip(batch_k, batch_n)))
    assert (lo, hi) == pytest.approx((est.lo, est.hi))   # the gate's estimator, not a copy of it
    assert 0.35 < lo and hi < 0.55


def test_few_batches_or_no_errors_keep_the_exact_binomial_interval():
    out = _rate(0, 400, [0] * 20, [20] * 20)
    assert out["rate"] == 0 and out["ci95"][0] == 0 and 0 < out["ci95"][1] < 0.01
    few = _rate(3, 30, [1, 2], [10, 20])
    assert few["ci95"][0] < 0.1 < few["ci95"][1]

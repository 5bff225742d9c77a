"""Streaming percentiles in bounded memory: `Quantiles.append(x)` per value, `summary()` once at the end.

Percentiles are Hyndman & Fan's type 8 (numpy's `method="median_unbiased"`; Hyndman & Fan, *The American
Statistician* 50(4), 1996): the q-quantile sits at order statistic h = (n + 1/3)q + 1/3 (1-based, linear between
neighbours, clamped to the sample), approximately median-unbiased whatever the distribution. numpy's default
(type 7, h = (n − 1)q + 1) is biased low in the tail of a small sample: the p99 of 100 exponential values is 9 %
low on average and under the true p99 in 73 % of samples (300 values: 3.4 %, 64 %); type 8 is under it in 46 %
(48 %) and errs high on average, +5 % (+1.4 %) — for independent values; a queue's latencies are not (below).

Values go into a fixed-size buffer (a compact `array('d')`). While the whole run fits in it (up to
`EXACT_LIMIT` values) the summary is exact — numpy's type-8 percentiles of the values. Past that, each full
buffer is folded (vectorised) into a fixed log-scale histogram and cleared, so memory stays the same whatever
the number of values (~0.5 MB buffer + ~40 k bins per estimator).

Histogram (the DDSketch mapping, Masson et al., VLDB 2019): bucket i holds values in (γ^(i−1), γ^i] with
γ = (1 + α)/(1 − α); a value is represented by 2γ^i/(γ + 1), within relative error α = `REL_ERR` (0.1 %) of
every value in its bucket. A percentile interpolates between the representatives of the two neighbouring order
statistics at the same type-8 position as the exact path, so it is within α of the exact percentile. Count, mean and
max stay exact (running sum and max). Values ≤ `TINY` (1 ns) count as 0.

Pooling runs: `tail()` is the run's upper tail in that mapping — the nonzero buckets from the one holding its
`TAIL_FROM` percentile up (every one for a run of at most `WHOLE_TAIL` values), as two lists (bucket index,
count): at most `n·(1 − TAIL_FROM/100)` + 1 buckets, or `WHOLE_TAIL`, whatever the run's length.
`pooled_percentile` merges several runs' tails into a type-8 percentile of all their values together (within α
of the exact one), as long as it lies above the start of every tail that is not its whole run; below it, it
answers that start's lower edge — an upper bound, so the error can only be conservative. The gate's p99 terms
rest on it (simulation/estimates.py `pooled_quantile`): the p99 of every replication's values pooled, not the
mean of the runs' own p99s, which runs low for autocorrelated (queueing) latencies in short runs.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

REL_ERR = 0.001
EXACT_LIMIT = 1 << 16
TINY = 1e-9
_GAMMA = (1.0 + REL_ERR) / (1.0 - REL_ERR)
_LOG_GAMMA = math.log(_GAMMA)
_MIN_I = math.floor(math.log(TINY) / _LOG_GAMMA)    # buckets from TINY ...
_MAX_I = math.ceil(math.log(1e12) / _LOG_GAMMA)     # ... to 10^12 (s) — beyond any simulated latency
_NBINS = _MAX_I - _MIN_I + 1
TAIL_FROM = 50.0    # `tail()` keeps the buckets from the run's p50 up (see `pooled_percentile`) ...
WHOLE_TAIL = 2000   # ... or all of them for a run of at most this many values


def _bucket(values: np.ndarray) -> np.ndarray:
    """The log bucket index i of each value (> TINY): value in (γ^(i−1), γ^i]."""
    return np.ceil(np.log(values) / _LOG_GAMMA).astype(np.int64)


def _rep(i: float) -> float:
    """Bucket i's representative value, within REL_ERR of every value in it."""
    return 2.0 * math.exp(i * _LOG_GAMMA) / (_GAMMA + 1.0)


def pooled_percentile(runs: list[tuple[int, dict]], q: float) -> float | None:
    """The type-8 q-percentile (0–100) of all values of several runs together, from each run's (count, `tail()`);
    None when they hold no value. Exact to REL_ERR when it lies above every partial tail's start (module doc); else
    the highest start's lower edge, above the true percentile. A partial tail (a run of more than WHOLE_TAIL
    values) whose p50 lies above the pooled p99 takes a run far slower than the rest: none of 6,000 short
    M/M/1/11 runs at ρ = 0.9 had its p50 above the stationary p99, where 1.5–1.8 % of 130-value runs had their
    p90 above it (a tail from the p90 hit this bound in ~30 % of 20-run sets)."""
    runs = [(n, t) for n, t in runs if n]
    total = sum(n for n, _ in runs)
    if not total:
        return None
    if not any(len(t["i"]) for _, t in runs):
        return 0.0   # every value ≤ TINY
    # A run that stored only its upper part (`tail()`) knows nothing of the values under its first bucket.
    starts = [int(t["i"][0]) for n, t in runs if len(t["i"]) and not _whole(n, t)]
    floor = max(starts) if starts else _MIN_I
    idx = np.concatenate([np.asarray(t["i"], dtype=np.int64) for _, t in runs])
    cnt = np.concatenate([np.asarray(t["n"], dtype=np.int64) for _, t in runs])
    keep = idx >= floor
    # Counts per bucket from `floor` up, empty buckets included: a rank's bucket is the first whose running
    # count passes it, which is never an empty one.
    cum = np.cumsum(np.bincount(idx[keep] - floor, weights=cnt[keep]).astype(np.int64))
    below = total - (int(cum[-1]) if len(cum) else 0)   # values under `floor`'s bucket, not stored for every run

    def at(rank: int) -> float:
        if rank < below:   # they are all below this edge: an upper bound (values ≤ TINY only: 0)
            return math.exp((floor - 1) * _LOG_GAMMA) if starts else 0.0
        return _rep(float(floor + int(np.searchsorted(cum, rank - below, side="right"))))

    r = min(max((total + 1.0 / 3.0) * q / 100.0 - 2.0 / 3.0, 0.0), total - 1.0)   # type 8, 0-based
    k = int(math.floor(r))
    lo = at(k)
    return lo if k + 1 >= total else lo + (r - k) * (at(k + 1) - lo)


def _whole(n: int, tail: dict) -> bool:
    """Whether a run's tail holds all of its `n` values (a run of at most WHOLE_TAIL values, none ≤ TINY)."""
    whole = tail.get("whole")
    return sum(tail["n"]) >= n if whole is None else whole


def tail_arrays(runs: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """`runs` (count, `tail()`) with each tail's lists as integer arrays, and whether it holds the whole run:
    converted once for a caller that pools the same runs many times over (the jackknife's leave-one-out sets)."""
    out = []
    for n, t in runs:
        counts = np.asarray(t["n"], dtype=np.int64)
        out.append((n, {"i": np.asarray(t["i"], dtype=np.int64), "n": counts, "whole": int(counts.sum()) >= n}))
    return out


class Quantiles:
    """Percentiles, mean, max and count of a stream of non-negative values in bounded memory.

    `append` is the buffer's own (C) append, for the hot path; the owner calls `fold_if_full()` every so often
    (the buffer may pass `limit` by that many values).
    """

    __slots__ = ("buf", "append", "limit", "hist", "zeros", "n", "total", "max")

    def __init__(self, limit: int = EXACT_LIMIT) -> None:
        self.buf = array("d")
        self.append = self.buf.append
        self.limit = limit
        self.hist: np.ndarray | None = None   # counts per log bucket once the buffer has overflowed
        self.zeros = 0        # folded values <= TINY
        self.n = 0            # values folded into the histogram
        self.total = 0.0
        self.max = -math.inf

    def __len__(self) -> int:
        return self.n + len(self.buf)

    @property
    def exact(self) -> bool:
        return self.hist is None

    def fold_if_full(self) -> None:
        if len(self.buf) >= self.limit:
            self._fold()

    def _fold(self) -> None:
        """Move the buffer's values into the histogram and clear it."""
        if not len(self.buf):
            return
        a = np.array(self.buf, dtype=float)
        del self.buf[:]
        if self.hist is None:
            self.hist = np.zeros(_NBINS, dtype=np.int64)
        self.n += len(a)
        self.total += float(a.sum())
        self.max = max(self.max, float(a.max()))
        pos = a[a > TINY]
        self.zeros += len(a) - len(pos)
        idx = np.clip(_bucket(pos) - _MIN_I, 0, _NBINS - 1)
        self.hist += np.bincount(idx, minlength=_NBINS)

    def percentiles(self, qs: list[float]) -> list[float]:
        """Type-8 (median-unbiased) percentiles: exact while unfolded, else within REL_ERR."""
        if self.hist is None:
            return [float(v) for v in np.percentile(np.asarray(self.buf, dtype=float), qs, method="median_unbiased")]
        self._fold()
        n, zeros = self.n, self.zeros
        cum = np.cumsum(self.hist)
        reps = 2.0 * np.exp((np.arange(_NBINS) + _MIN_I) * _LOG_GAMMA) / (_GAMMA + 1.0)

        def at(rank: int) -> float:    # the order statistic `rank` (0-based), as its bucket's representative
            if rank < zeros:
                return 0.0
            return float(reps[int(np.searchsorted(cum, rank - zeros, side="right"))])

        out = []
        for q in qs:
            r = min(max((n + 1.0 / 3.0) * q / 100.0 - 2.0 / 3.0, 0.0), n - 1.0)   # type 8, 0-based
            k = int(math.floor(r))
            lo = at(k)
            out.append(lo if k + 1 >= n else lo + (r - k) * (at(k + 1) - lo))
        return out

    def tail(self) -> dict:
        """The run's values from its `TAIL_FROM` percentile up as log buckets: {"i": bucket indices (ascending),
        "n": their counts} — mergeable across runs (`pooled_percentile`), bounded by the bucket count. A run of
        at most `WHOLE_TAIL` values keeps every bucket: a small run's p50 may lie above the pooled p99 of larger
        ones (a run where only a few slow requests succeeded), and would set `pooled_percentile`'s floor."""
        if not len(self):
            return {"i": [], "n": []}
        (start,) = self.percentiles([TAIL_FROM]) if len(self) > WHOLE_TAIL else (0.0,)
        if self.hist is None:
            a = np.asarray(self.buf, dtype=float)
            idx, counts = np.unique(_bucket(a[a > TINY]), return_counts=True)
        else:
            nz = np.nonzero(self.hist)[0]
            idx, counts = nz + _MIN_I, self.hist[nz]
        keep = idx >= (_bucket(np.array([start]))[0] if start > TINY else _MIN_I)
        return {"i": [int(i) for i in idx[keep]], "n": [int(c) for c in counts[keep]]}

    def summary(self) -> dict:
        """{p50, p95, p99, mean, max, count} (None when empty), as the report prints them."""
        count = len(self)
        if not count:
            return {"p50": None, "p95": None, "p99": None, "mean": None, "max": None, "count": 0}
        p50, p95, p99 = self.percentiles([50, 95, 99])
        if self.hist is None:
            a = np.asarray(self.buf, dtype=float)
            mean, mx = float(a.mean()), float(a.max())
        else:
            mean, mx = self.total / self.n, self.max
        return {"p50": p50, "p95": p95, "p99": p99, "mean": mean, "max": mx, "count": count}


def summary_of(values) -> dict:
    """A run's summary with its tail, as simulation/report.py writes it, from a list of values (tests, tools)."""
    q = Quantiles()
    for v in values:
        q.append(float(v))
    return q.summary() | {"tail": q.tail()}

"""Time-bucketed window averages and the sliding max window (Knative `pkg/autoscaler/aggregation`).

`WindowBuckets` ports `aggregation/bucketing.go: TimedFloat64Buckets` (each bucket is the SUM of values
recorded in that granule; `window_average` divides by min(window, lastWrite − firstWrite + 1 granule);
seconds with no record between writes count as 0, seconds after the last write are left out of the window
(divisor min(…, window − d)); after a gap of a whole window it starts over; a write older than the last one goes
into its bucket and moves the first write back to it, unless it is a whole window old, when it is ignored).
Averages are rounded to 6 decimals as Knative's are (`roundToNDigits(precision, …)` = Go's
`math.Round(x·1e6) / 1e6`: the product rounded to a double, then halves away from zero; precision = 6), so the
running total's floating-point residue (1e-15 after the load has gone) does not keep a pod: ceil(1e-15 / target)
would be 1.
`WeightedWindowBuckets` is `WeightedFloat64Buckets`, the windows a revision annotated
`autoscaling.knative.dev/metric-aggregation-algorithm: weighted-exponential` gets (`metrics/collector.go:
newCollection` builds all its windows so; the buckets are recorded as above): the average is
Σ_i m·(1 − m)^i · bucket[lastWrite − i] over the window's seconds up to now, newest first, with the smoothing
coefficient m = max(1 − 0.0001^(1/n), 0.2) for n buckets (`computeSmoothingCoeff`: 0.2 for a window of 42 s or
more, ≈ 0.7846 for the 6 s panic window). Seconds after the last write lower the weights (m·(1 − m)^d for the
newest) and drop the oldest d buckets; the first write's time is not read (a young window's weights sum to less
than 1), nor is the result rounded. Floats as Knative's on amd64: the same multiplications and additions in the same
order, `(1 − m)^d` as Go's `math.Pow` computes an integer power (`go_int_pow`); m itself is within a unit in the
last place of Go's (Go's assembly Exp and Log round differently from the C library's for 5 of the 39 bucket counts
below 42: 24, 25, 31, 34 and 35; checked against Go 1.19 for 1 to 3,600 buckets).
`MaxWindow` is the scale-down-delay window of `aggregation/max/timewindow.go` (maximum over the last
`window` in 2 s granules).
"""

from __future__ import annotations

import math
from collections import deque

PRECISION = 6   # bucketing.go: precision
_floor = math.floor
_TWO52 = 4503599627370496.0   # 2^52: every double at or above it is an integer


def round6(x: float) -> float:
    """bucketing.go `roundToNDigits(6, x)`: Go's `math.Round(x*1e6) / 1e6`, bit for bit.

    y = x·1e6 is rounded to a double first (Go multiplies two float64s), then `math.Round` takes y to the nearest
    integer with halves AWAY from zero (not Python's half-even `round`: 1/128 → 0.007813, 67.7604375 →
    67.760438), keeping the sign of a zero; the division by 1e6 is IEEE's. |y| ≥ 2^52 is an integer already (and
    ±inf, NaN stay what they are): y / 1e6."""
    y = x * 1e6
    if 0.0 < y < _TWO52:                            # the common case: a positive average
        k = _floor(y)
        if y - k >= 0.5:                            # exact (k ≤ y < k + 1)
            return (k + 1) / 1e6
        return k / 1e6
    if -_TWO52 < y < 0.0:
        k = _floor(-y)
        if -y - k >= 0.5:
            k += 1
        return -(k / 1e6)                           # (−0.0 for k = 0)
    return y / 1e6                                  # ±0 (sign kept), |y| ≥ 2^52, ±inf, NaN


class WindowBuckets:
    """Sum-per-bucket ring over a time window."""

    __slots__ = ("granularity", "window", "n", "buckets", "first", "last", "total", "_stale")

    def __init__(self, window_s: float, granularity_s: float = 1.0) -> None:
        self.granularity = granularity_s
        self.window = window_s
        self.n = max(1, int(math.ceil(window_s / granularity_s)))
        self.buckets = [0.0] * self.n
        self.first = None  # bucket index of first write (after the last reset)
        self.last = None   # bucket index of last write
        self.total = 0.0
        self._stale = (None, 0, 0, 0.0)   # (total, last, to, total − stale buckets last+1..to): `window_average`

    def _index(self, t: float) -> int:
        return int(math.floor(t / self.granularity + 1e-9))

    def record(self, t: float, value: float) -> None:
        self.add(self._index(t), value)

    def add(self, idx: int, value: float) -> None:
        """`record` into bucket `idx` (a 1 s scrape at t = idx adds to bucket idx: the KPA loop passes the scrape's
        second, so its buckets must be 1 s — `AutoscalerConfig` rejects any other `bucket_s`)."""
        last = self.last
        n = self.n
        buckets = self.buckets
        if last is not None and idx == last + 1 and n > 1:   # the next second: the common case
            j = idx % n
            total = self.total - buckets[j]
            buckets[j] = 0.0 + value
            self.total = total + value
            self.last = idx
            return
        if last is not None and idx < last:
            # An earlier second (bucketing.go `Record`): ignored if a whole window before the last write, else
            # added to its bucket, the first write moved back to it if earlier; the last write stays.
            if idx <= last - n:
                return
            if idx < self.first:
                self.first = idx
            buckets[idx % n] += value
            self.total += value
            return
        if last is None or idx - last >= n:
            buckets = self.buckets = [0.0] * n
            self.total = 0.0
            self.first = idx
        elif idx != last:
            for i in range(last + 1, idx + 1):
                j = i % n
                self.total -= buckets[j]
                buckets[j] = 0.0
        self.last = idx
        buckets[idx % n] += value
        self.total += value

    def add_zeros(self, idx: int, end: int) -> None:
        """`add(i, 0.0)` for i = idx..end, idx > last: the same float operations (a bucket already 0.0 leaves the
        total as it is: x − 0.0 + 0.0 = x for every total here, no value being −0.0), so once a whole window is
        0.0 the rest costs nothing."""
        if idx > end:
            return
        n = self.n
        if n == 1 or self.last is None or idx != self.last + 1:
            self.add(idx, 0.0)                             # a gap, a reset, or a 1-bucket window (each add resets)
            if n == 1 and idx < end:
                self.add(end, 0.0)
            if n == 1 or idx == end:
                return
            idx += 1
        buckets = self.buckets
        total = self.total
        for i in range(idx, min(end, idx + n - 1) + 1):
            j = i % n
            b = buckets[j]
            if b:
                total = total - b + 0.0
                buckets[j] = 0.0
        self.total = total
        self.last = end

    def window_average(self, now: float) -> float:
        return self.average_at(_floor(now / self.granularity + 1e-9))

    def average_at(self, now_idx: int) -> float:
        """`window_average` at any time in bucket `now_idx`."""
        last = self.last
        if last is None:
            return 0.0
        n = self.n
        d = now_idx - last
        if d == 1 and n > 1:
            # Stale seconds after the last write are left out, not counted as 0: Knative divides by
            # min(lastWrite − firstWrite + 1, n − d) ("last received data 10 s ago → average over the first
            # 50 s").
            # One stale second (a KPA tick just before the scrape of its own second): total − b[now].
            nb = last - self.first + 1
            if nb > n - 1:
                nb = n - 1
            return round6((self.total - self.buckets[now_idx % n]) / nb)
        if d <= 0:
            nb = min(last - self.first + 1, n)
            return round6(self.total / nb)
        if d < n:
            # total − b[last+1] − … − b[now] in that order; with no write since the previous call (the same
            # total object: `add` replaces it) the subtractions go on from where that call stopped.
            total = self.total
            buckets = self.buckets
            t, l, to, ret = self._stale
            if t is not total or l != last or to > now_idx:
                to, ret = last, total
            for i in range(to + 1, now_idx + 1):
                ret -= buckets[i % n]
            self._stale = (total, last, now_idx, ret)
            nb = last - self.first + 1
            if nb > n - d:
                nb = n - d
            return round6(ret / nb)
        return 0.0


# bucketing.go: weightPrecision (the weights of a full window sum to at least this) and minExponent. Go evaluates
# its constant 1 − weightPrecision exactly: 0.0001, not the double 1 − 0.9999.
WEIGHT_SHORTFALL = 0.0001
MIN_EXPONENT = 0.2
WEIGHTED_EXPONENTIAL = "weighted-exponential"


def smoothing_coeff(nb: int) -> float:
    """`computeSmoothingCoeff(nb)`: max(1 − 0.0001^(1/nb), 0.2), the power taken as Go's `math.Pow` takes it for
    an exponent 1/nb (x itself for 1, a square root for 1/2, else exp(y·log x))."""
    y = 1.0 / nb
    if y == 1.0:
        p = WEIGHT_SHORTFALL
    elif y == 0.5:
        p = math.sqrt(WEIGHT_SHORTFALL)
    else:
        p = math.exp(y * math.log(WEIGHT_SHORTFALL))
    return max(1.0 - p, MIN_EXPONENT)


def go_int_pow(x: float, k: int) -> float:
    """x^k for an integer k ≥ 0 with 0 < x < 1, rounded as Go's `math.Pow` rounds it: x's mantissa squared and
    multiplied in by the bits of k, lowest first, the binary exponents kept apart and applied once at the end
    (so an intermediate power below the smallest double does not flush to 0). Python's `x ** k` is correctly
    rounded and differs from it in the last bits for many of the powers the weighted windows take (most k for
    x = 0.8, one k in eight for the 6 s panic window's 1 − m)."""
    if k == 0:
        return 1.0
    if k == 1:
        return x
    acc, acc_exp = 1.0, 0
    sq, sq_exp = math.frexp(x)
    while k:
        if not -4096 <= sq_exp <= 4096:       # the result under- or overflows whatever bits remain
            acc_exp += sq_exp
            break
        if k & 1:
            acc *= sq
            acc_exp += sq_exp
        sq *= sq
        sq_exp *= 2
        if sq < 0.5:
            sq += sq
            sq_exp -= 1
        k >>= 1
    return math.ldexp(acc, acc_exp)


class WeightedWindowBuckets(WindowBuckets):
    """`WeightedFloat64Buckets`: the same buckets and writes, the exponentially weighted average (module doc)."""

    __slots__ = ("coeff", "_weights")

    def __init__(self, window_s: float, granularity_s: float = 1.0) -> None:
        super().__init__(window_s, granularity_s)
        self.coeff = smoothing_coeff(self.n)
        self._weights: dict[int, list[float]] = {}   # d → the weights newest first, as the loop below makes them

    def _weights_at(self, d: int) -> list[float]:
        """The `count` weights m·(1−m)^d, m·(1−m)^(d+1), … in the order and rounding of Go's loop (each the last
        times 1−m). Kept for d = 0 and 1, the gaps a tick meets (it runs in the second of the last scrape, or the
        next), so a tick costs one multiply-add per non-zero bucket."""
        weights = self._weights.get(d)
        if weights is None:
            keep = 1.0 - self.coeff
            mult = self.coeff * go_int_pow(keep, d) if d > 0 else self.coeff
            weights = []
            for _ in range(self.n - d):
                weights.append(mult)
                mult *= keep
            if d <= 1:
                self._weights[d] = weights
        return weights

    def average_at(self, now_idx: int) -> float:
        """`WeightedFloat64Buckets.WindowAverage` at any time in bucket `now_idx`."""
        last = self.last
        if last is None:
            return 0.0
        d = now_idx - last
        if d * self.granularity > self.window:          # isEmptyLocked: nothing for more than a window
            return 0.0
        buckets = self.buckets
        if not any(buckets):                            # every term 0.0 (and the sum starts at +0.0)
            return 0.0
        j = last % self.n                                # newest first: last, last − 1, … (n − d of them)
        ret = 0.0
        for value, weight in zip(buckets[j::-1] + buckets[:j:-1], self._weights_at(max(d, 0))):
            if value:                                   # ret + 0.0 × w = ret (ret ≥ +0.0): the zeros change nothing
                ret += value * weight
        return ret


def make_window(window_s: float, granularity_s: float, algorithm: str) -> WindowBuckets:
    """newCollection's `bucketCtor`: weighted buckets for `weighted-exponential`, linear ones otherwise."""
    if algorithm == WEIGHTED_EXPONENTIAL:
        return WeightedWindowBuckets(window_s, granularity_s)
    return WindowBuckets(window_s, granularity_s)


def add_pair(a: WindowBuckets, b: WindowBuckets, idx: int, value: float) -> None:
    """`a.add(idx, value); b.add(idx, value)` (the stable and the panic window), the next second inline."""
    m = idx - 1
    if a.last == m and b.last == m and a.n > 1 and b.n > 1:
        buckets = a.buckets
        j = idx % a.n
        total = a.total - buckets[j]
        buckets[j] = 0.0 + value
        a.total = total + value
        a.last = idx
        buckets = b.buckets
        j = idx % b.n
        total = b.total - buckets[j]
        buckets[j] = 0.0 + value
        b.total = total + value
        b.last = idx
    else:
        a.add(idx, value)
        b.add(idx, value)


class MaxWindow:
    """Maximum of the values recorded over the last `window_s` (granule 2 s, the decider tick).

    A monotonic deque of (granule, max in it) with strictly decreasing values: a value is dropped as soon as a
    later one is at least as large (it can never be the maximum again), so `record` is amortised O(1) and
    `current` O(1) (the sliding-window maximum).
    """

    __slots__ = ("window", "granularity", "values", "span")

    def __init__(self, window_s: float, granularity_s: float = 2.0) -> None:
        self.window = window_s
        self.granularity = granularity_s
        self.span = int(math.ceil(window_s / granularity_s))
        self.values: deque[list] = deque()  # [granule index, max value in it], values strictly decreasing

    def record(self, t: float, value: int) -> None:
        idx = int(math.floor(t / self.granularity + 1e-9))
        vals = self.values
        if vals and vals[-1][0] == idx:
            if value <= vals[-1][1]:
                value = None
            else:
                vals.pop()
        if value is not None:
            while vals and vals[-1][1] <= value:
                vals.pop()
            vals.append([idx, value])
        oldest = idx - self.span + 1
        while vals and vals[0][0] < oldest:
            vals.popleft()

    def current(self) -> int:
        return self.values[0][1] if self.values else 0

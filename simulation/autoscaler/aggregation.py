"""Time-bucketed window averages and the sliding max window (Knative `pkg/autoscaler/aggregation`).

`WindowBuckets` ports `aggregation/bucketing.go: TimedFloat64Buckets` (each bucket is the SUM of values
recorded in that granule; `window_average` divides by min(window, lastWrite − firstWrite + 1 granule);
seconds with no record between writes count as 0, seconds after the last write are left out of the window
(divisor min(…, window − d)); after a gap of a whole window it starts over).
`MaxWindow` is the scale-down-delay window of `aggregation/max/timewindow.go` (maximum over the last
`window` in 2 s granules).
"""

from __future__ import annotations

import math


class WindowBuckets:
    """Sum-per-bucket ring over a time window."""

    __slots__ = ("granularity", "window", "n", "buckets", "first", "last", "total")

    def __init__(self, window_s: float, granularity_s: float = 1.0) -> None:
        self.granularity = granularity_s
        self.window = window_s
        self.n = max(1, int(math.ceil(window_s / granularity_s)))
        self.buckets = [0.0] * self.n
        self.first = None  # bucket index of first write (after the last reset)
        self.last = None   # bucket index of last write
        self.total = 0.0

    def _index(self, t: float) -> int:
        return int(math.floor(t / self.granularity + 1e-9))

    def record(self, t: float, value: float) -> None:
        idx = self._index(t)
        if self.last is None or idx - self.last >= self.n:
            self.buckets = [0.0] * self.n
            self.total = 0.0
            self.first = idx
        elif idx != self.last:
            for i in range(self.last + 1, idx + 1):
                j = i % self.n
                self.total -= self.buckets[j]
                self.buckets[j] = 0.0
        if self.last is None or idx > self.last:
            self.last = idx
        self.buckets[idx % self.n] += value
        self.total += value

    def is_empty(self) -> bool:
        return self.last is None

    def window_average(self, now: float) -> float:
        if self.last is None:
            return 0.0
        now_idx = self._index(now)
        d = now_idx - self.last
        if d <= 0:
            nb = min(self.last - self.first + 1, self.n)
            return self.total / nb
        if d < self.n:
            # Stale seconds after the last write are left out, not counted as 0: Knative divides by
            # min(lastWrite − firstWrite + 1, n − d) ("last received data 10 s ago → average over the first 50 s").
            ret = self.total
            for i in range(self.last + 1, now_idx + 1):
                ret -= self.buckets[i % self.n]
            nb = min(self.last - self.first + 1, self.n - d)
            return ret / nb
        return 0.0


class MaxWindow:
    """Maximum of the values recorded over the last `window_s` (granule 2 s, the decider tick)."""

    __slots__ = ("window", "granularity", "values")

    def __init__(self, window_s: float, granularity_s: float = 2.0) -> None:
        self.window = window_s
        self.granularity = granularity_s
        self.values: list[tuple[int, int]] = []  # (granule index, max value in it)

    def record(self, t: float, value: int) -> None:
        idx = int(math.floor(t / self.granularity + 1e-9))
        vals = self.values
        if vals and vals[-1][0] == idx:
            vals[-1] = (idx, max(vals[-1][1], value))
        else:
            vals.append((idx, value))
        oldest = idx - int(math.ceil(self.window / self.granularity)) + 1
        while vals and vals[0][0] < oldest:
            vals.pop(0)

    def current(self) -> int:
        return max(v for _, v in self.values) if self.values else 0

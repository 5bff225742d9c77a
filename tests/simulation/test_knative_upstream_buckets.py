"""The KPA's windows (simulation/autoscaler/aggregation.py) against knative/serving's own tests (Knative 1.23):
- `pkg/autoscaler/aggregation/bucketing_test.go` on `WindowBuckets` (TimedFloat64Buckets), 1 s granularity;
  `now` is a whole second here (Go's `time.Now()` has a phase, which `Truncate` removes);
- `TimedFloat64Buckets.Record` for writes older than the last one (review 13, finding 7): such a write goes into
  its bucket and moves the first write back to it, unless it is a whole window old, when it is ignored; checked
  also against a line-by-line port of `Record` over random write orders;
- `pkg/autoscaler/aggregation/max/window_test.go` TestWindowMax and `timewindow_test.go` TestTimedWindowMax on
  `MaxWindow` (the scale-down-delay window) with 1 s granules.
"""

from __future__ import annotations

import math
import random

import pytest

from simulation.autoscaler.aggregation import MaxWindow, WeightedWindowBuckets, WindowBuckets

from tests.simulation.test_window_exact import go_round6


def _for_each_sum(b: WindowBuckets, now: float) -> float:
    """bucketing_test.go `forEachBucket(now)` summed: the n − (now − lastWrite) buckets from the last write back."""
    count = b.n - (math.floor(now) - b.last)
    return sum(b.buckets[(b.last - i) % b.n] for i in range(count))


def test_timed_float64_buckets_window_average():
    """TestTimedFloat64BucketsWindowAverage, every check in order. From "Check with an earlier time" on, the
    writes older than the last one: before the fix the first write stayed where it was (1988 instead of 497,
    996.5 instead of 398.6, …) and a write a window old or more went into a live bucket."""
    now = 100.0
    b = WindowBuckets(5.0)
    b.record(now, 1)
    assert b.window_average(now) == 1.0                            # firstWrite used: not 0.2
    for i in range(1, 5):
        b.record(now + i, i + 1)
    assert b.window_average(now + 4) == 15 / 5
    assert b.window_average(now + 3.6) == 15 / 5                   # now lags behind
    assert b.window_average(now + 6) == (15 - 1 - 2) / (5 - 2)     # short hole
    assert b.window_average(now + 10) == 0.0                       # long hole
    b.record(now + 6, 91)
    assert b.window_average(now + 6) == (15 - 1 - 2 + 91) / 5      # write with holes
    now += 60                                                      # advance much farther
    b.record(now, 1984)
    assert b.window_average(now) == 1984.0
    b.record(now - 3, 4)                                           # an earlier time
    assert b.window_average(now) == (4 + 1984) / 4
    now += 1                                                       # one more second
    b.record(now, 5)
    assert b.window_average(now) == (4 + 1984 + 5) / 5
    b.record(now - 3, 10)                                          # an earlier time again
    assert b.window_average(now) == (4 + 10 + 1984 + 5) / 5
    b.record(now - 6, 10)                                          # too early: ignored
    assert b.window_average(now) == (4 + 10 + 1984 + 5) / 5
    b.record(now - 5, 10)                                          # exactly a window early: ignored
    assert b.window_average(now) == (4 + 10 + 1984 + 5) / 5
    b.record(now + 5, 10)                                          # nothing for exactly a window: cleared
    assert b.window_average(now + 5) == 10.0


def test_descending_record():
    """TestDescendingRecord: a 5 every second from t = 8 down to 0 into a 5 s window: the average at t = 5 is 5
    (the writes at 3 and below are a window older than the last write, 8, and ignored; 45 before the fix)."""
    b = WindowBuckets(5.0)
    for i in range(8, -1, -1):
        b.record(100.0 + i, 5)
    assert b.window_average(105.0) == 5.0


def test_many_reps_and_many_reps_in_non_monotonic_order():
    """TestTimedFloat64BucketsManyReps and …WithNonMonotonicalOrder: five writes into each of five seconds (in
    the order 0, 3, 2, 1, 4 for the second): the window holds 100 in both (and averages 20 over 5 buckets)."""
    b = WindowBuckets(60.0)
    for p in range(5):
        for t in range(5):
            b.record(101.0 + p, float(p + t))
    assert _for_each_sum(b, 105.0) == 100.0
    b = WindowBuckets(60.0)
    for p, d in enumerate((0, 3, 2, 1, 4)):
        for t in range(5):
            b.record(100.0 + d, float(p + t))
    assert _for_each_sum(b, 104.0) == 100.0 and b.first == 100 and b.last == 104
    assert b.window_average(104.0) == 20.0


def test_holes():
    """TestTimedFloat64BucketsHoles: 1..5 over five seconds sum to 15 (average 3); a write at the 9th second
    clears the 3 seconds between, leaving 5 + 2 = 7."""
    b = WindowBuckets(5.0)
    for i in range(5):
        b.record(100.0 + i, float(i + 1))
    assert _for_each_sum(b, 104.0) == 15.0 and b.window_average(104.0) == 3.0
    b.record(108.0, 2.0)
    assert _for_each_sum(b, 108.0) == 7.0


def test_simple_one_second_granularity():
    """TestTimedFloat64BucketsSimple, granularity = 1s (a 2 min window): the activator's 1 and a scrape's 10 in
    the same second add up; the later seconds keep their own."""
    b = WindowBuckets(120.0)
    for t, v in ((100.0, 1.0), (100.1, 10.0), (101.0, 1.0), (103.0, 1.0)):
        b.record(t, v)
    got = {i: b.buckets[i % b.n] for i in range(100, 104) if b.buckets[i % b.n] > 0}
    assert got == {100: 11.0, 101: 1.0, 103: 1.0}


def test_resize_window_initial_data_set():
    """TestTimedFloat64BucketsResizeWindow, the initial data set: 1..6 over six seconds into 5 buckets (the 1
    rolled over): sum 20, average 4."""
    b = WindowBuckets(5.0)
    for i in range(6):
        b.record(200.0 + i, float(i + 1))
    assert _for_each_sum(b, 205.0) == 20.0 and b.window_average(205.0) == 20 / 5


# -- `Record` for any write order, against a line-by-line port ------------------------------------------------

class GoRecord:
    """bucketing.go `TimedFloat64Buckets.Record` and `WindowAverage` written out as upstream has them (times as
    whole seconds, granularity 1 s, window n s; `lastWrite`/`firstWrite` None for Go's zero time)."""

    def __init__(self, n: int) -> None:
        self.n, self.buckets, self.first, self.last, self.total = n, [0.0] * n, None, None, 0.0

    def record(self, t: int, value: float) -> None:
        n = self.n
        if self.last != t:
            if self.last is None or t + n > self.last:                  # bucketTime.Add(window).After(lastWrite)
                if self.first is None or self.first > t:
                    self.first = t
                if self.last is None or t > self.last:
                    if self.last is None or t - self.last >= n:
                        self.first = t
                        self.buckets = [0.0] * n
                        self.total = 0.0
                    else:
                        for i in range(self.last + 1, t + 1):
                            self.total -= self.buckets[i % n]
                            self.buckets[i % n] = 0.0
                    self.last = t
            else:
                return                                                  # a window size ago: ignored
        self.buckets[t % n] += value
        self.total += value

    def window_average(self, now: int) -> float:
        if self.last is None:
            return 0.0
        d = now - self.last
        if d <= 0:
            return go_round6(self.total / min(self.last - self.first + 1, self.n))
        if d < self.n:
            ret = self.total
            for i in range(self.last + 1, now + 1):
                ret -= self.buckets[i % self.n]
            return go_round6(ret / min(self.last - self.first + 1, self.n - d))
        return 0.0


def _state(w) -> tuple:
    return w.first, w.last, w.total.hex(), tuple(float(b).hex() for b in w.buckets)


@pytest.mark.parametrize("n", (1, 2, 5, 60))
@pytest.mark.parametrize("cls", (WindowBuckets, WeightedWindowBuckets))
def test_any_write_order_is_records_bit_for_bit(cls, n):
    """Writes mostly forward, often back by less than a window, sometimes back by a window or more, into the
    same second and after gaps: the same first and last write, buckets and total as `Record` (bit for bit), and
    the same linear average at every step."""
    older = 0
    for seed in range(8):
        rng = random.Random(seed)
        ours, ref = cls(float(n)), GoRecord(n)
        t = 1000
        for _ in range(400):
            r = rng.random()
            if r < 0.45:
                t += rng.choice((0, 1, 1, 2, n, n + 1))
                at = t
            else:
                at = t - rng.choice((1, 1, 2, max(1, n - 1), n, n + 1, 3 * n))
                older += ref.last is not None and at < ref.last
            v = rng.choice((0.0, 1.0, 0.1, rng.random() * 5))
            ours.record(float(at), v)
            ref.record(at, v)
            assert _state(ours) == _state(ref), (seed, at)
            if cls is WindowBuckets:
                now = t + rng.choice((0, 0, 1, n // 2, n))
                assert ours.window_average(float(now)).hex() == ref.window_average(now).hex(), (seed, now)
    assert older > 500


def test_an_old_write_leaves_the_next_seconds_fast_path_alone():
    """After an earlier-second write, the next second's write (the fast path) clears the right bucket: the
    window is what `Record` makes of the same writes."""
    ours, ref = WindowBuckets(6.0), GoRecord(6)
    for at, v in ((10, 1.0), (11, 2.0), (8, 4.0), (12, 3.0), (13, 5.0), (9, 7.0), (14, 1.0), (20, 2.0), (17, 3.0)):
        ours.add(at, v)
        ref.record(at, v)
        assert _state(ours) == _state(ref), at


# -- aggregation/max ------------------------------------------------------------------------------------------

WINDOW_MAX = [   # window_test.go TestWindowMax: (name, values, index function or None, Current() after each)
    ("single value", [1], None, [1]),
    ("ascending values", [1, 2], None, [1, 2]),
    ("descending values", [2, 1], None, [2, 2]),
    ("up, down, up", [1, 2, 1], None, [1, 2, 2]),
    ("windowing out", [5, 6, 5, 5, 5, 5, 5], None, [5, 6, 6, 6, 6, 6, 5]),
    ("windowing out with gaps", [6, 5, 2, 1], lambda i: i + 3 if i >= 3 else i, [6, 6, 6, 2]),
    ("windowing out 2", [5, 6, 5, 7, 5, 5, 1], None, [5, 6, 6, 7, 7, 7, 7]),
    ("windowing out 3", [5, 8, 5, 7, 5, 5], None, [5, 8, 8, 8, 8, 8]),
    ("windowing out 4", [5, 8, 5, 7, 5, 5, 1], None, [5, 8, 8, 8, 8, 8, 7]),
    ("windowing out 5", [5, 8, 5, 7, 5, 5, 1, 4, 4, 4], None, [5, 8, 8, 8, 8, 8, 7, 7, 5, 5]),
    ("windowing out 6", [5, 8, 5, 7, 5, 5, 1, 4, 4, 4, 4], None, [5, 8, 8, 8, 8, 8, 7, 7, 5, 5, 4]),
    ("windowing out 7", [5, 8, 5, 7, 5, 5, 1, 4, 4, 4, 4, 9], None, [5, 8, 8, 8, 8, 8, 7, 7, 5, 5, 4, 9]),
    ("windowing out 8", [5, 8, 5, 7, 5, 5, 1, 4, 4, 4, 4, 9, 3, 4, 2, 1, 0], None,
     [5, 8, 8, 8, 8, 8, 7, 7, 5, 5, 4, 9, 9, 9, 9, 9, 4]),
    ("multiple with same index, ascending", [1, 2, 3, 4, 5, 6, 7], lambda i: 1, [1, 2, 3, 4, 5, 6, 7]),
    ("multiple with same index, descending", [7, 6, 5, 4, 3, 2, 1], lambda i: 1, [7] * 7),
]


@pytest.mark.parametrize("name, values, index, expect", WINDOW_MAX, ids=[r[0] for r in WINDOW_MAX])
def test_window_max(name, values, index, expect):
    """`newWindow(5)`: a MaxWindow over 5 granules of 1 s, index i recorded at t = i."""
    m = MaxWindow(5.0, 1.0)
    got = []
    for i, v in enumerate(values):
        m.record(float(index(i) if index else i), v)
        got.append(m.current())
    assert got == expect


TIMED_MAX = [   # timewindow_test.go TestTimedWindowMax: NewTimeWindow(5s, 1s), (offset from now, value)
    ("single value", [(0.0, 5)], 5),
    ("two values in same second", [(0.0, 6), (0.5, 5)], 6),
    ("two values", [(0.0, 5), (1.0, 8)], 8),
    ("time gap", [(0.0, 5), (6.0, 4)], 4),
]


@pytest.mark.parametrize("name, entries, expect", TIMED_MAX, ids=[r[0] for r in TIMED_MAX])
@pytest.mark.parametrize("now", (1000.0, 1000.3))
def test_timed_window_max(name, entries, expect, now):
    m = MaxWindow(5.0, 1.0)
    for dt, v in entries:
        m.record(now + dt, v)
    assert m.current() == expect

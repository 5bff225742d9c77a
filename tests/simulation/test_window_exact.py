"""`WindowBuckets`' shortcuts (`add_zeros`, the cached stale part of `window_average`) against the plain
algorithm of `aggregation/bucketing.go` they replace: the same state and the same floats, bit for bit."""

from __future__ import annotations

import math
import random

import pytest

from simulation.autoscaler.aggregation import PRECISION, WindowBuckets


class PlainBuckets:
    """Every write and every average done the straightforward way (the reference)."""

    def __init__(self, n: int) -> None:
        self.n, self.buckets, self.first, self.last, self.total = n, [0.0] * n, None, None, 0.0

    def add(self, idx: int, value: float) -> None:
        n, last = self.n, self.last
        if last is None or idx - last >= n:
            self.buckets, self.total, self.first = [0.0] * n, 0.0, idx
        elif idx != last:
            for i in range(last + 1, idx + 1):
                self.total -= self.buckets[i % n]
                self.buckets[i % n] = 0.0
        if last is None or idx > last:
            self.last = idx
        self.buckets[idx % n] += value
        self.total += value

    def window_average(self, now: float) -> float:
        if self.last is None:
            return 0.0
        n, now_idx = self.n, math.floor(now + 1e-9)
        d = now_idx - self.last
        if d <= 0:
            return round(self.total / min(self.last - self.first + 1, n), PRECISION)
        if d >= n:
            return 0.0
        ret = self.total
        for i in range(self.last + 1, now_idx + 1):
            ret -= self.buckets[i % n]
        return round(ret / min(self.last - self.first + 1, n - d), PRECISION)


def _state(w) -> tuple:
    return (w.first, w.last, w.total.hex(), tuple(b.hex() for b in w.buckets))


def _drive(fast: WindowBuckets, plain: PlainBuckets, seed: int) -> int:
    """Random writes (bursts of values, runs of zeros, gaps longer than the window) and averages read at every
    second in between; returns how many averages read stale seconds (d > 1)."""
    rng = random.Random(seed)
    t, stale = 0, 0
    for _ in range(150):
        kind = rng.random()
        if kind < 0.4:                                  # a second with load (sometimes two writes)
            t += 1
            for _ in range(rng.choice((1, 1, 2))):
                v = rng.choice((0.0, 1.0, rng.random() * 3, 1e-17, 0.1))
                fast.add(t, v), plain.add(t, v)
        elif kind < 0.7:                                # quiet seconds: zeros, maybe after a gap
            a = t + rng.choice((1, 1, 2, 5))
            end = a + rng.choice((0, 1, 3, fast.n - 1, fast.n, fast.n + 1, 3 * fast.n))
            fast.add_zeros(a, end)
            for i in range(a, end + 1):
                plain.add(i, 0.0)
            t = end
        # read the averages over the following seconds, as ticks would
        for dt in range(rng.choice((0, 1, 2, 3, fast.n // 2 + 1, fast.n + 2))):
            now = t + dt + rng.choice((0.0, 0.5))
            got, want = fast.window_average(now), plain.window_average(now)
            assert got.hex() == want.hex(), (seed, now)
            stale += math.floor(now) - t > 1 and dt < fast.n
        t += rng.choice((0, 0, 1, 4))
        assert _state(fast) == _state(plain), seed
    return stale


@pytest.mark.parametrize("n", (1, 2, 6, 60, 600))
def test_zero_runs_and_stale_averages_equal_the_plain_window_bit_for_bit(n):
    stale = sum(_drive(WindowBuckets(float(n)), PlainBuckets(n), seed) for seed in range(6))
    if n > 2:
        assert stale > 50                                # the cached stale part was exercised


def test_a_broken_shortcut_is_caught(monkeypatch):
    """Mutants: a run of zeros that forgets to clear a bucket, a stale cache kept across a write."""
    def no_clear(self, idx, end):
        self.last = end
    monkeypatch.setattr(WindowBuckets, "add_zeros", no_clear)
    with pytest.raises(AssertionError):
        for seed in range(12):
            _drive(WindowBuckets(60.0), PlainBuckets(60), seed)
    monkeypatch.undo()

    orig = WindowBuckets.window_average

    def sticky(self, now):   # a cache keyed on nothing: an old stale sum after a write
        t, l, to, ret = self._stale
        if t is not None:
            self._stale = (self.total, self.last, to, ret)
        return orig(self, now)
    monkeypatch.setattr(WindowBuckets, "window_average", sticky)
    with pytest.raises(AssertionError):
        for seed in range(12):
            _drive(WindowBuckets(60.0), PlainBuckets(60), seed)


def test_round6_is_round_to_6_digits_bit_for_bit():
    """`round6(x)` = `round(x, 6)` for random doubles in and outside (0, 1000), values next to a half of the 6th
    decimal (exact ties included: k/128), tiny and huge values, 0 and negatives (sign of zero included)."""
    from simulation.autoscaler.aggregation import round6

    rng = random.Random(6)
    xs = [0.0, -0.0, 1e-300, 5e-7, 4.9999999e-7, 1e-6, 999.9999995, 1000.0, 1e9, -1e-9, -2.5, math.inf]
    xs += [rng.uniform(0, 1000) for _ in range(100_000)]
    xs += [rng.uniform(0, 3) for _ in range(50_000)]
    xs += [m / 128 for m in range(0, 128 * 1000, 7)]                   # dyadic: exact ties x·10^6 = k + 0.5
    for _ in range(50_000):                                            # next to a half, a few ulps either side
        x = (rng.randrange(1, 10**9) + 0.5) / 1e6
        for k in range(-3, 4):
            xs.append(x + k * math.ulp(x))
    xs += [struct_double(rng.getrandbits(64)) for _ in range(20_000)]  # any bit pattern
    for x in xs:
        if math.isnan(x):
            continue
        assert math.copysign(1.0, round6(x)) == math.copysign(1.0, round(x, 6)) and round6(x) == round(x, 6), x


def struct_double(bits: int) -> float:
    import struct

    return struct.unpack("<d", struct.pack("<Q", bits))[0]

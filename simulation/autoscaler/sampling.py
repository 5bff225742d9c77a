"""Which pods a KPA scrape reads: Knative's sample size and a uniform sample of that many pods.

`sample_size` is `metrics/sample_size.go: populationMeanSampleSize` (95 % confidence, 5 % error: n = N for N ≤ 3,
else ceil(N·X/(N+X−1)), X = 15.3664). Knative shuffles the pod list and scrapes the first n that answer
(`metrics/stats_scraper.go: scrapePods`; every simulated pod answers), a uniform sample without replacement.

`sorted_sample(rng, N, n)` = `sorted(rng.sample(range(N), n))` with the very same draws from `rng` (CPython's
`Random.sample` algorithm: a pool for small populations, rejection from a set for large ones, each index from
`_randbelow`, i.e. `getrandbits(bit_length)` until below the bound) — inlined because the KPA draws it every second.
Attribution: the algorithm is that of CPython's `random.Random.sample` (Lib/random.py, Python Software Foundation,
PSF License Version 2), re-expressed here; the same algorithm is needed because the draws must be byte-identical to
the reference path's `rng.sample` (the seeded results and golden outputs depend on every draw from the scrape
generator), which a different sampling algorithm would not give.
"""

from __future__ import annotations

import math
from math import ceil as _ceil, log as _log
from random import Random

SAMPLE_X = 1.96 * 1.96 * 100.0 / (5.0 * 5.0)   # 15.3664, metrics/sample_size.go


def sample_size(n: int) -> int:
    if n <= 3:
        return n
    return int(math.ceil(n * SAMPLE_X / (n + SAMPLE_X - 1.0)))


def _set_size(k: int) -> int:
    """random.sample's threshold: a population up to this size is copied to a pool, a larger one uses a set."""
    size = 21
    if k > 5:
        size += 4 ** _ceil(_log(k * 3, 4))
    return size


def sorted_sample(rng: Random, n_all: int, n: int) -> list[int]:
    """`sorted(rng.sample(range(n_all), n))`, the same draws, for 0 < n < n_all."""
    getrandbits = rng.getrandbits
    if n_all <= _set_size(n):
        pool = list(range(n_all))
        out = []
        for m in range(n_all, n_all - n, -1):
            bits = m.bit_length()
            j = getrandbits(bits)
            while j >= m:
                j = getrandbits(bits)
            out.append(pool[j])
            pool[j] = pool[m - 1]
        out.sort()
        return out
    bits = n_all.bit_length()
    selected: set[int] = set()
    add = selected.add
    for _ in range(n):
        j = getrandbits(bits)
        while j >= n_all or j in selected:
            j = getrandbits(bits)
        add(j)
    return sorted(selected)

"""Errors that come in bursts, as a queue-full episode refuses several arrivals in a row: the synthetic runs of
the rate-interval tests (tests/simulation/test_rate_clusters.py, test_rate_difference.py)."""

from __future__ import annotations

import random


def bursts(rng: random.Random, per_run: float, mean_size: float) -> int:
    """Errors of one run: Poisson(`per_run`) bursts, each a geometric number (≥ 1, mean `mean_size`) of them."""
    errors, t = 0, rng.expovariate(1.0)
    while t < per_run:
        errors += 1
        while rng.random() > 1.0 / mean_size:
            errors += 1
        t += rng.expovariate(1.0)
    return errors

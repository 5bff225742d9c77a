"""Reports for p99 tests: runs whose own p99 is a given figure, with the tails the gate pools (report.py)."""

from __future__ import annotations

import math

import numpy as np

from simulation.quantiles import summary_of


def values(p99: float, n: int) -> list[float]:
    """n exponential quantiles scaled so that their own (type-8) p99 is `p99`."""
    base = np.array([-math.log1p(-(k + 0.5) / n) for k in range(n)])
    return list(base * p99 / np.percentile(base, 99, method="median_unbiased"))


def latency(p99: float, n: int) -> dict:
    return summary_of(values(p99, n)) if n else {"p99": None, "count": 0}

"""Random priors: a duration or a throughput that is a fixed number or a distribution, in one grammar.

A key takes a number (fixed: every draw is that value) or a mapping `{dist: fixed|uniform|lognormal|exponential,
...}`; `max:` clips draws (e.g. cluster-autoscaler's max-node-provision-time). The scenario's cluster
(simulation/scenario.py) and the stack's `coldStart` priors (stackconfig/platform.py) both read it with
`parse_dist`, so a stack prior reaches the simulation as the very mapping the user wrote (scaled to its units).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist
from validation.fields import Section

KINDS = ("fixed", "uniform", "lognormal", "exponential")
# A throughput drawn from an exponential can be 0 (nothing ever arrives): rates take the other three.
RATE_KINDS = ("fixed", "uniform", "lognormal")


@dataclass(frozen=True)
class Dist:
    """A non-negative random value: fixed `a`, uniform [a, b], lognormal (median a, sigma b) or exponential (mean
    a); `cap` clips every draw (None: no clip)."""

    kind: str = "fixed"
    a: float = 0.0
    b: float = 0.0
    cap: float | None = None

    def sample(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            x = self.a
        elif self.kind == "uniform":
            x = rng.uniform(self.a, self.b)
        elif self.kind == "lognormal":
            x = math.exp(rng.gauss(math.log(self.a), self.b)) if self.a > 0 else 0.0
        else:
            x = rng.expovariate(1.0 / self.a) if self.a > 0 else 0.0
        return x if self.cap is None else min(x, self.cap)

    @property
    def deterministic(self) -> bool:
        """Every draw is the same value (no spread at all)."""
        return self.quantile(0.0) == self.quantile(1.0)

    def quantile(self, q: float) -> float:
        """The value a draw stays at or below with probability q (0 ≤ q ≤ 1)."""
        if self.kind == "fixed" or (self.kind == "lognormal" and self.b == 0):
            x = self.a
        elif self.kind == "uniform":
            x = self.a + q * (self.b - self.a)
        elif q <= 0.0:
            x = 0.0
        elif q >= 1.0:
            x = math.inf
        elif self.kind == "lognormal":
            x = self.a * math.exp(self.b * NormalDist().inv_cdf(q))
        else:
            x = -self.a * math.log1p(-q)
        return x if self.cap is None else min(x, self.cap)

    @property
    def mean(self) -> float:
        c = math.inf if self.cap is None else self.cap
        if self.kind == "fixed":
            return min(self.a, c)
        if self.kind == "uniform":
            lo, hi = self.a, self.b
            if c >= hi:
                return (lo + hi) / 2
            if c <= lo or hi == lo:
                return min(lo, c)
            return ((c * c - lo * lo) / 2 + c * (hi - c)) / (hi - lo)
        if self.kind == "lognormal":
            m, s = self.a, self.b
            if math.isinf(c) or s == 0:
                return min(m * math.exp(s * s / 2), c)
            phi, z = NormalDist().cdf, math.log(c / m) / s
            return m * math.exp(s * s / 2) * phi(z - s) + c * (1 - phi(z))
        if math.isinf(c) or self.a <= 0:
            return self.a
        return -self.a * math.expm1(-c / self.a)

    def scaled(self, k: float) -> "Dist":
        """The same distribution in other units (every value × k; sigma stays)."""
        return Dist(self.kind, self.a * k, self.b if self.kind == "lognormal" else self.b * k,
                    None if self.cap is None else self.cap * k)

    def spec(self) -> float | dict:
        """What `parse_dist` reads back: a number when fixed, else the mapping."""
        if self.kind == "fixed" and self.cap is None:
            return self.a
        params = {"fixed": {"value": self.a}, "uniform": {"low": self.a, "high": self.b},
                  "lognormal": {"median": self.a, "sigma": self.b}, "exponential": {"mean": self.a}}[self.kind]
        return {"dist": self.kind, **params, **({} if self.cap is None else {"max": self.cap})}

    def describe(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        body = {"fixed": lambda: f"{self.a:g}{u}", "uniform": lambda: f"uniform {self.a:g}–{self.b:g}{u}",
                "lognormal": lambda: f"lognormal median {self.a:g}{u}, sigma {self.b:g}",
                "exponential": lambda: f"exponential mean {self.a:g}{u}"}[self.kind]()
        return body + (f", at most {self.cap:g}{u}" if self.cap is not None else "")


def parse_dist(sec: Section, key: str, default: Dist, *, minimum: float = 0.0, maximum: float | None = None,
               positive: bool = False, unit: str = "seconds", kinds: tuple[str, ...] = KINDS) -> Dist:
    """`sec[key]`: a number (fixed) or `{dist: <kind>, ...}`. Every value (the number, value, low, high, median,
    mean, max) must be >= `minimum` (> 0 as well when `positive`: a throughput) and <= `maximum`; a problem names
    the key, the value and what is allowed."""
    raw = sec.raw(key)
    if raw is None:
        return default
    exclusive = positive and minimum <= 0
    bound = f"between {minimum:g} and {maximum:g}" if maximum is not None and not exclusive else \
        f"{'>' if exclusive else '>='} {minimum:g}" + (f" and <= {maximum:g}" if maximum is not None else "")
    forms = f"{{dist: {'|'.join(kinds)}, ...}}"
    if not isinstance(raw, dict):
        ok = isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw) and raw >= minimum
        if ok and not (positive and raw <= 0) and (maximum is None or raw <= maximum):
            return Dist("fixed", float(raw))
        sec.problem(key, raw, f"expected a number {bound} ({unit}), or a distribution {forms}")
        return default
    s = sec.section(key)
    kind = s.choice("dist", kinds, required=True)
    lo_ok = dict(min=minimum, min_exclusive=exclusive, max=maximum)
    out = default
    if kind == "fixed":
        out = Dist("fixed", s.float("value", default.a, **lo_ok, required=True))
    elif kind == "uniform":
        lo = s.float("low", None, **lo_ok, required=True)
        hi = s.float("high", None, **lo_ok, required=True)
        if lo is not None and hi is not None and hi < lo:
            s.problem("high", s.data["high"], f"expected >= low ({lo:g})")
        elif lo is not None and hi is not None:
            out = Dist("uniform", lo, hi)
    elif kind == "lognormal":
        median = s.float("median", None, min=max(minimum, 0.0), min_exclusive=minimum <= 0, max=maximum,
                         required=True)
        sigma = s.float("sigma", None, min=0, max=5, required=True)
        if median is not None and sigma is not None:
            out = Dist("lognormal", median, sigma)
    elif kind == "exponential":
        mean = s.float("mean", None, **lo_ok, required=True)
        if mean is not None:
            out = Dist("exponential", mean)
    if kind is not None and kind != "fixed" and s.has("max"):
        cap = s.float("max", None, min=max(out.quantile(0.0), minimum), min_exclusive=exclusive, max=maximum)
        if cap is not None and out is not default:
            out = Dist(out.kind, out.a, out.b, cap)
    s.done()
    return out

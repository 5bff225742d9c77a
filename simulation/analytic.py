"""Closed forms the simulator is checked against (reference queueing.md) and small statistics helpers.

a = λ/μ offered load, c servers, K system capacity, ρ = a/c.
M/M/c/K: p₀ = [Σ_{n<c} aⁿ/n! + (a^c/c!) Σ_{n=c}^{K} ρ^{n−c}]⁻¹; pₙ = aⁿ/n!·p₀ (n < c), (a^c/c!)ρ^{n−c}p₀ (c ≤ n ≤ K);
blocking P_B = p_K; λ_eff = λ(1 − p_K); L_q = Σ (n−c)pₙ; W_q = L_q/λ_eff; L = L_q + λ_eff/μ; W = W_q + 1/μ.
Erlang B: B(0) = 1, B(k) = a·B(k−1)/(k + a·B(k−1)).  Erlang C: C = B/(1 − ρ(1 − B)), W_q = C/(cμ − λ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class MMcK:
    p_block: float
    lambda_eff: float
    L: float
    Lq: float
    W: float
    Wq: float


def mmck(lam: float, mu: float, c: int, K: int) -> MMcK:
    a = lam / mu
    rho = a / c
    terms = []
    for n in range(K + 1):
        if n < c:
            terms.append(a ** n / math.factorial(n))
        else:
            terms.append(a ** c / math.factorial(c) * rho ** (n - c))
    p0 = 1.0 / sum(terms)
    p = [t * p0 for t in terms]
    pk = p[K]
    lam_eff = lam * (1 - pk)
    lq = sum((n - c) * p[n] for n in range(c, K + 1))
    l = lq + lam_eff / mu
    return MMcK(pk, lam_eff, l, lq, l / lam_eff if lam_eff else 0.0, lq / lam_eff if lam_eff else 0.0)


def erlang_b(c: int, a: float) -> float:
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(c: int, a: float) -> float:
    rho = a / c
    b = erlang_b(c, a)
    return b / (1 - rho * (1 - b))


Z975 = 1.959963984540054   # the standard normal's 0.975 quantile
_EXACT_DF = 1000             # above: the Cornish-Fisher expansion, exact to ~1e-13 there


def t_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer `df` >= 1, in closed form (Abramowitz & Stegun 26.7.3-4:
    θ = atan(t/√df); odd df: (2/π)(θ + sin θ Σ a_k cos^(2k+1) θ), even df: sin θ Σ b_k cos^(2k) θ)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:
        term = total = math.cos(theta) if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2.0 / math.pi * (theta + s * total)
    term = total = 1.0
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


@lru_cache(maxsize=None)
def t975(df: int) -> float:
    """Student t's 0.975 quantile (a two-sided 95 % interval's multiplier) for integer `df`; inf for df < 1.

    Up to 1000 degrees of freedom: `t_two_sided` inverted by bisection to full double precision; above, the
    Cornish-Fisher expansion in 1/df (Abramowitz & Stegun 26.7.5)."""
    if df <= 0:
        return float("inf")
    if df > _EXACT_DF:
        z, v = Z975, float(df)
        g = ((z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
        return z + sum(gi / v ** (i + 1) for i, gi in enumerate(g))
    lo, hi = Z975, 13.0   # t(0.975, 1) = 12.706; the quantile falls as df grows, never below z
    while hi - lo > 1e-13 * hi:
        mid = (lo + hi) / 2
        if t_two_sided(mid, df) < 0.95:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def batch_means_ci(values: list[float]) -> tuple[float, float, float]:
    """(mean, lo, hi): 95 % t-interval over batch means (batches treated as independent)."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0.0
    m = sum(values) / n
    if n < 2:
        return m, m, m
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    h = t975(n - 1) * math.sqrt(var / n)
    return m, m - h, m + h


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)

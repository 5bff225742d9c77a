"""Closed forms the simulator is checked against (reference queueing.md) and small statistics helpers.

a = λ/μ offered load, c servers, K system capacity, ρ = a/c.
M/M/c/K: p₀ = [Σ_{n<c} aⁿ/n! + (a^c/c!) Σ_{n=c}^{K} ρ^{n−c}]⁻¹; pₙ = aⁿ/n!·p₀ (n < c), (a^c/c!)ρ^{n−c}p₀ (c ≤ n ≤ K);
blocking P_B = p_K; λ_eff = λ(1 − p_K); L_q = Σ (n−c)pₙ; W_q = L_q/λ_eff; L = L_q + λ_eff/μ; W = W_q + 1/μ.
Erlang B: B(0) = 1, B(k) = a·B(k−1)/(k + a·B(k−1)).  Erlang C: C = B/(1 − ρ(1 − B)), W_q = C/(cμ − λ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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


# t quantiles (two-sided 95 %) for small degrees of freedom; 1.96 beyond.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
         11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
         20: 2.086, 24: 2.064, 29: 2.045, 39: 2.023, 59: 2.001}


def t975(df: int) -> float:
    if df <= 0:
        return float("inf")
    if df in _T975:
        return _T975[df]
    for k in sorted(_T975):
        if k >= df:
            return _T975[k]
    return 1.96


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

"""Closed forms the simulator is checked against (reference queueing.md) and small statistics helpers.

a = λ/μ offered load, c servers, K system capacity, ρ = a/c.
M/M/c/K: p₀ = [Σ_{n<c} aⁿ/n! + (a^c/c!) Σ_{n=c}^{K} ρ^{n−c}]⁻¹;
pₙ = aⁿ/n!·p₀ (n < c), (a^c/c!)ρ^{n−c}p₀ (c ≤ n ≤ K);
blocking P_B = p_K; λ_eff = λ(1 − p_K); L_q = Σ (n−c)pₙ; W_q = L_q/λ_eff; L = L_q + λ_eff/μ; W = W_q + 1/μ.
Erlang B: B(0) = 1, B(k) = a·B(k−1)/(k + a·B(k−1)).  Erlang C: C = B/(1 − ρ(1 − B)), W_q = C/(cμ − λ).
M/M/1/K sojourn of an accepted request (FIFO): it finds n < K in the system with probability ∝ ρⁿ (PASTA) and
stays an Erlang(n + 1, μ) time, so P(T > t) = Σ_{n<K} ρⁿ/Σ_{m<K} ρᵐ · Σ_{j ≤ n} e^{−μt}(μt)^j/j!.
"""

from __future__ import annotations

import math
from statistics import NormalDist
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


def mm1k_sojourn_sf(t: float, lam: float, mu: float, K: int) -> float:
    """P(sojourn > t) for a request M/M/1/K accepts (module doc)."""
    rho, x = lam / mu, mu * t
    weights = [rho ** n for n in range(K)]
    total, sf, poisson, cum = sum(weights), 0.0, math.exp(-x), 0.0
    for n, w in enumerate(weights):
        if n:
            poisson *= x / n
        cum += poisson
        sf += w / total * cum
    return sf


def mm1k_sojourn_quantile(q: float, lam: float, mu: float, K: int) -> float:
    """The accepted requests' sojourn-time `q` quantile (0 < q < 1) of M/M/1/K, by bisection to 1e-9 s."""
    lo, hi = 0.0, 1.0
    while mm1k_sojourn_sf(hi, lam, mu, K) > 1.0 - q:
        hi *= 2.0
    while hi - lo > 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mm1k_sojourn_sf(mid, lam, mu, K) > 1.0 - q else (lo, mid)
    return (lo + hi) / 2


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


@lru_cache(maxsize=None)
def t_multiplier(level: float, df: int) -> float:
    """Student t's (1 + level)/2 quantile: a two-sided `level` interval's multiplier, for integer `df`; inf for
    df < 1. `t975` at 0.95; otherwise `t_two_sided` inverted by bisection (the normal quantile above 1000 df,
    within 1e-3 of t there)."""
    if level == 0.95:
        return t975(df)
    if df <= 0:
        return float("inf")
    z = NormalDist().inv_cdf((1.0 + level) / 2.0)
    if df > _EXACT_DF:
        return z * (1.0 + (z * z + 1.0) / (4.0 * df))   # Cornish-Fisher's first term (A&S 26.7.5)
    lo, hi = z, 2.0 * z
    while t_two_sided(hi, df) < level:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        if t_two_sided(mid, df) < level:
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


def _log_beta(a: float, b: float) -> float:
    """log B(a, b). With a small whole-number side s: log Γ(s) − Σ_{i<s} log(B + i), which keeps its precision
    where log Γ(B) − log Γ(B + s) would cancel two numbers of size B log B (B up to ~10⁹ requests)."""
    small, big = min(a, b), max(a, b)
    if small == int(small) and small <= 64:
        return math.lgamma(small) - math.fsum(math.log(big + i) for i in range(int(small)))
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _beta_cf(a: float, b: float, x: float, y: float) -> float:
    """The continued fraction of I_x(a, b) (A&S 26.5.8), by the modified Lentz method; it converges fast for
    x < (a + 1)/(a + b + 2), where `beta_cdf` uses it. Its first term 1 − (a + b)x/(a + 1) is taken from
    y = 1 − x, as (1 − b + (a + b)y)/(a + 1): for x near 1 the first form cancels to nothing."""
    tiny = 1e-300
    c, d = 1.0, (1.0 - b + (a + b) * y) / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 1_000_000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= d * c
        if abs(d * c - 1.0) < 1e-15:
            return f
    raise ArithmeticError(f"the incomplete beta's continued fraction did not converge (a={a}, b={b}, x={x})")


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function I_x(a, b): P(X ≤ x) for X ~ Beta(a, b), a, b > 0."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return _beta_cdf(a, b, x, 1.0 - x, math.log(x), math.log1p(-x))


def _beta_cdf(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """I_x(a, b) with y = 1 − x and both logarithms given, so that neither is taken of a rounded 1 − x."""
    if x > (a + 1.0) / (a + b + 2.0):   # I_x(a, b) = 1 − I_y(b, a), on the side where the fraction converges
        return 1.0 - _beta_cdf(b, a, y, x, log_y, log_x)
    return math.exp(a * log_x + b * log_y - _log_beta(a, b)) / a * _beta_cf(a, b, x, y)


_TINY, _BELOW_1 = 5e-324, math.nextafter(1.0, 0.0)


def beta_quantile(p: float, a: float, b: float) -> float:
    """The x with I_x(a, b) = p (0 < p < 1): Newton steps on `beta_cdf` with its density, kept inside a
    bisection bracket; to ~1e-10 relative (checked against scipy.stats.beta.ppf in the tests)."""
    log_b = _log_beta(a, b)
    mean = a / (a + b)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    z = Z975 if p > 0.5 else -Z975   # start: the normal approximation at the usual tail, kept inside (0, 1)
    x = min(max(mean + z * sd, mean * 1e-3, _TINY), 1.0 - (1.0 - mean) * 1e-3, _BELOW_1)
    lo, hi = 0.0, 1.0
    for _ in range(400):
        f = beta_cdf(x, a, b) - p
        if f == 0.0:
            return x
        lo, hi = (x, hi) if f < 0 else (lo, x)
        density = math.exp((a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) - log_b)
        new = x - f / density if density > 0.0 else -1.0
        if not lo < new < hi:   # Newton left the bracket: bisect it (geometrically while it spans decades)
            new = math.sqrt(lo * hi) if 0.0 < lo and hi < 1.0 and hi > 4.0 * lo else \
                (lo + hi) / 2.0 if lo > 0.0 or hi < 1.0 else (x + 1.0) / 2.0
            new = min(max(new, _TINY), _BELOW_1)   # inside (0, 1), where the density is defined
        if abs(new - x) <= 1e-13 * new:
            return new
        x = new
    return x


@lru_cache(maxsize=4096)
def clopper_pearson(k: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson's exact interval for a binomial proportion from k events in n trials (or effective, not whole,
    counts: `simulation.estimates.rate_interval`): the p whose binomial tails P(X ≥ k) and P(X ≤ k) are (1 − level)/2 —
    the beta quantiles B((1 − level)/2; k, n − k + 1) and B((1 + level)/2; k + 1, n − k) (Clopper & Pearson, Biometrika
    1934). Each end holds its error at most (1 − level)/2 for every p, where Wilson's may not at small n: Wilson's lower
    end for 3 of 5 is 0.231, yet P(X ≥ 3 | n = 5, p = 0.2) = 5.8 %; this one's is 0.147. (0, 1) when n = 0."""
    if n <= 0:
        return 0.0, 1.0
    tail = (1.0 - level) / 2.0
    edge = math.log(tail) / n   # 0 or n events: the bound solves p^n = tail (or (1 − p)^n = tail) in closed form
    lo = 0.0 if k <= 0 else (math.exp(edge) if k >= n else beta_quantile(tail, k, n - k + 1))
    hi = 1.0 if k >= n else (-math.expm1(edge) if k <= 0 else beta_quantile(1.0 - tail, k + 1, n - k))
    return lo, hi


def zero_event_trials(fraction: float, level: float = 0.95) -> int:
    """The fewest trials in which 0 events put the Clopper–Pearson upper end at or under `fraction`:
    1 − ((1 − level)/2)^(1/n) ≤ fraction, i.e. n ≥ ln((1 − level)/2) / ln(1 − fraction)
    (17 for 0.2 at 95 %)."""
    n = max(1, math.ceil(math.log((1.0 - level) / 2.0) / math.log1p(-fraction)))
    while clopper_pearson(0, n, level)[1] > fraction:   # guard the float edge of the closed form
        n += 1
    while n > 1 and clopper_pearson(0, n - 1, level)[1] <= fraction:
        n -= 1
    return n

"""Closed forms beyond M/M/1 (reference queueing.md), each worked out here by hand and not through
`simulation.analytic`: M/M/4 (Erlang C) and M/D/1 (Pollaczek–Khinchine), against replications of the simulated
request path with the breaker off (containerConcurrency 0) and a server with an unbounded FIFO queue.

Each interval is a 99 % t-interval over independent seeded replications; each test also checks that the closed
form for a service time 10 % longer or shorter falls outside it, so the interval is tight enough to see that.
"""

from math import factorial

import pytest

from simulation.analytic import erlang_c

T995 = {5: 4.032, 7: 3.499}  # Student's t 0.995 quantiles by degrees of freedom (tables)


def erlang_c_by_hand(c: int, a: float) -> float:
    """P(wait) in M/M/c at offered load a = λ/μ < c: the Erlang C formula."""
    tail = a ** c / factorial(c) * c / (c - a)
    return tail / (sum(a ** k / factorial(k) for k in range(c)) + tail)


def mmc_sojourn(lam: float, s: float, c: int) -> float:
    """Mean time in system of M/M/c with mean service time s: C(c, a) / (c/s − λ) + s."""
    return erlang_c_by_hand(c, lam * s) / (c / s - lam) + s


def md1_sojourn(lam: float, s: float) -> float:
    """Mean time in system of M/D/1 (Pollaczek–Khinchine with zero service variance): s + ρ s / (2 (1 − ρ))."""
    rho = lam * s
    return s + rho * s / (2 * (1 - rho))


def replicate(scn, lam, parallelism, dist, duration, n):
    means = []
    for seed in range(1, n + 1):
        m = scn.mmck_scenario(lam, 1, duration, dist=dist)
        m["inferenceService"]["spec"]["predictor"]["containerConcurrency"] = 0  # no breaker, no 503
        m["server"]["parallelism"] = parallelism
        d = scn.run(m, seed=seed)
        assert "503" not in d["status_counts"] and d["incomplete"] == 0
        means.append(d["latency_s"]["mean"])
    mean = sum(means) / n
    sd = (sum((x - mean) ** 2 for x in means) / (n - 1)) ** 0.5
    half = T995[n - 1] * sd / n ** 0.5
    return mean - half, mean + half


def test_hand_computed_values():
    # a = 3, c = 4: Σ_{k<4} 3^k/k! = 13, 3^4/4! · 4/(4 − 3) = 13.5, C = 13.5 / 26.5 = 27/53
    assert erlang_c_by_hand(4, 3.0) == pytest.approx(27 / 53, rel=1e-12)
    assert mmc_sojourn(3.0, 1.0, 4) == pytest.approx(27 / 53 + 1, rel=1e-12)  # 1.5094
    assert erlang_c(4, 3.0) == pytest.approx(27 / 53, rel=1e-12)  # the project's Erlang C beyond c = 1
    assert erlang_c(1, 0.6) == pytest.approx(0.6, rel=1e-12)  # M/M/1: P(wait) = ρ
    assert md1_sojourn(0.6, 1.0) == pytest.approx(1.75, rel=1e-12)  # 1 + 0.6 / 0.8


def test_four_servers_are_mmc_erlang_c(scn):
    lo, hi = replicate(scn, 3.0, 4, "exponential", 4000.0, 6)
    assert lo <= mmc_sojourn(3.0, 1.0, 4) <= hi, (lo, hi)
    assert not lo <= mmc_sojourn(3.0, 1.1, 4) <= hi and not lo <= mmc_sojourn(3.0, 0.9, 4) <= hi, (lo, hi)


def test_deterministic_service_is_md1_pollaczek_khinchine(scn):
    lo, hi = replicate(scn, 0.6, 1, "deterministic", 8000.0, 8)
    assert lo <= md1_sojourn(0.6, 1.0) <= hi, (lo, hi)
    assert not lo <= md1_sojourn(0.6, 1.1) <= hi and not lo <= md1_sojourn(0.6, 0.9) <= hi, (lo, hi)
    # exponential service at the same load waits twice as long in queue (M/M/1: W = 2.5): the law matters
    assert hi < mmc_sojourn(0.6, 1.0, 1) == pytest.approx(2.5)

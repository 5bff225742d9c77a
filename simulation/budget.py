"""The request budget: how many requests one simulation run may generate, checked before it starts.

A run's time and memory grow with the number of requests it simulates (each is a SimPy process), so a workload
of 1e4 req/s over the gate's 900 s would run for minutes inside `pulumi preview`. `expected_requests` is the
mean number of arrivals over the run (the integral of the arrival rate; rows × rate_scale for a trace); client
retries come on top, bounded while the run goes: at most as many again as the budget (simulation/client.py
`retry_limit`), so a retry storm stops the run naming client.max_retries instead of simulating 21× the budget. A stress
spike adds its extra stream (`spike_requests`), and a fleet run (simulation/fleet.py: every service of a stack on one
clock) is one run: its services' requests add up against one budget (`run_problem`). The gate runs up to
`gate.replications.max` runs per scenario, each within the budget.
"""

from __future__ import annotations

import math

from validation.errors import Problem
from simulation.workload import WorkloadSpec, replayed_rows

DEFAULT_REQUEST_BUDGET = 2_000_000  # ≈ 30–40 s of CPU at the simulator's 50–65k requests/s


def expected_requests(spec: WorkloadSpec, duration_s: float) -> float:
    """Mean number of arrivals in [0, duration_s)."""
    d = duration_s
    if spec.kind in ("poisson", "gamma"):
        return spec.rate * d
    if spec.kind == "step":
        return spec.rate * min(spec.at_s, d) + spec.to_rate * max(0.0, d - spec.at_s)
    if spec.kind == "spike":
        overlap = max(0.0, min(spec.at_s + spec.duration_s, d) - spec.at_s)
        return spec.rate * (d - overlap) + spec.peak_rate * overlap
    if spec.kind == "diurnal":  # ∫ rate·(1 + a·sin(2πt/P)) dt
        w = 2.0 * math.pi / spec.period_s
        return spec.rate * (d + spec.amplitude * (1.0 - math.cos(w * d)) / w)
    if spec.kind == "trace" and spec.path:
        times, _, _, rows = replayed_rows(spec)
        return sum((times[i] - spec.start_s) * spec.time_scale < d for i in rows) * spec.rate_scale
    return 0.0


def budget_problem(spec: WorkloadSpec, duration_s: float, budget: int, key: str, how_to_raise: str) -> Problem | None:
    """A Problem naming rate × duration and the budget when the run would exceed it, else None."""
    n = expected_requests(spec, duration_s)
    if n <= budget:
        return None
    rate = "the trace's rows × rate_scale" if spec.kind == "trace" else f"mean rate {n / duration_s:.4g} req/s"
    return Problem(key, f"{rate} × {duration_s:g} s ≈ {n:,.0f} requests",
                   f"expected at most the request budget of {budget:,} requests per run; lower the rate or the "
                   f"duration, or {how_to_raise} (the run's time and memory grow with the requests it simulates)")


def spike_requests(spec: WorkloadSpec, factor: float, at_s: float, duration_s: float, run_s: float) -> float:
    """Mean extra arrivals of a stress spike inside [0, run_s): (factor − 1) × the workload's rate at its start,
    for its span (simulation/stress.py `with_spike`)."""
    from simulation.stress import base_rate   # simulation.stress reads traces through simulation.workload
    overlap = max(0.0, min(at_s + duration_s, run_s) - at_s)
    return (factor - 1.0) * base_rate(spec, at_s) * overlap if overlap else 0.0


def run_problem(parts: dict[str, float], run: str, budget: int, key: str, how_to_raise: str) -> Problem | None:
    """A Problem when one run's parts (what → mean requests) add up past the budget, naming the largest ones."""
    total = math.fsum(parts.values())
    if total <= budget:
        return None
    top = sorted(parts.items(), key=lambda kv: -kv[1])
    shown = " + ".join(f"{name} {n:,.0f}" for name, n in top[:4]) + (" + …" if len(top) > 4 else "")
    return Problem(key, f"{run}: {shown}" + (f" ≈ {total:,.0f}" if len(top) > 1 else "") + " requests",
                   f"expected at most the request budget of {budget:,} requests per run, all the services of a run "
                   f"together; lower a rate, a spike's factor or durationS, or {how_to_raise} (the run's time and "
                   "memory grow with the requests it simulates)")

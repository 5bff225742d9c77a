"""The figures the gate judges, read off each replication's report dict (simulation/report.py), and their
estimates across replications with 95 % intervals (simulation/estimates.py).

`METRICS` names each figure with its kind: "rate" (events, requests) pooled by `rate_interval`; "mean" a number
(None when undefined, e.g. no successful request) averaged by `mean_interval`; "fraction" likewise, within [0, 1];
"p99" a latency summary (`simulation.quantiles.Quantiles.summary` with its `tail`) whose values are pooled across
the replications by `pooled_quantile` (its per-replication figure is the run's own p99); `difference` compares
two configurations' figures (what-if), a p99 by `pooled_quantile_difference`, a rate by `rate_difference`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from simulation.analytic import clopper_pearson
from simulation.estimates import (Estimate, independent_difference, mean_interval, paired_difference,
                                  pooled_quantile, pooled_quantile_difference, rate_difference, rate_interval)


def _status(report: Mapping, *codes: str) -> int:
    counts = report["status_counts"]
    return sum(counts.get(c, 0) for c in codes)


def served_errors(report: Mapping) -> int:
    """Requests answered with anything but 200 or an input-cap 400 (TGI's: 422) — the gate's error count."""
    return report["requests"] - _status(report, "200", "400", "422")


def _pct(key: str, q: str) -> Callable[[Mapping], float | None]:
    return lambda r: (r.get(key) or {}).get(q)


def time_at_max_replicas(report: Mapping) -> float:
    """Fraction of the run's measured window (after `warmup_s`) the autoscaler wanted maxReplicas or more
    (saturated); 0 when there is no maximum."""
    svc = report.get("service") or {}
    top = svc.get("max_scale") or svc.get("max_replicas") or 0
    series = report["replica_series"]
    t, desired = series["t"], series["desired"]
    if not top or len(t) < 2:
        return 0.0
    start, end = report.get("warmup_s") or 0.0, report["duration_s"]
    spans = [max(0.0, min(b, end) - max(a, start)) for a, b in zip(t, t[1:] + [end])]
    at_max = sum(span for span, d in zip(spans, desired) if d >= top)
    return at_max / sum(spans) if sum(spans) > 0 else 0.0


def longest_cold_start(report: Mapping) -> float | None:
    """The run's longest wait for a new pod to become Ready: its longest cold start, or the longest wait of a pod
    still not Ready at the horizon when that is longer (a censored cold start: at least that long); None when
    the run created no pod (never 0: a run without a cold start says nothing about how long one takes)."""
    waits = [(report.get("cold_start_s") or {}).get("max"), (report.get("cold_start_censored") or {}).get("max_s")]
    return max((w for w in waits if w is not None), default=None)


def cold_start_misses(reports: Sequence[Mapping], limit_s: float) -> Estimate:
    """The fraction of replications in which some new pod waited longer than `limit_s` for Ready (a cold start,
    or a wait still open at the horizon: `longest_cold_start`), with its Clopper–Pearson exact 95 % interval."""
    waits = [longest_cold_start(rep) for rep in reports]
    return run_fraction([w is not None and w > limit_s for w in waits])


def run_fraction(misses: Sequence[bool]) -> Estimate:
    """The fraction of replications with a miss, with its Clopper–Pearson exact 95 % interval.

    One Bernoulli outcome per replication, and replications are independent, so the interval is the binomial one on
    (misses, replications) — the ratio-estimator term of `rate_interval` is for events clustered within runs."""
    r, k = len(misses), sum(1 for m in misses if m)
    if r == 0:
        return Estimate(None, None, None, 0)
    lo, hi = clopper_pearson(k, r)
    return Estimate(k / r, lo, hi, r)


def rollout_ready_s(report: Mapping, deadline_s: float) -> float | None:
    """Seconds from a rollout's start until its new revision was Ready (simulation/stress.py), or None when it
    was not Ready within `deadline_s` (the progress deadline: the simulator records None then; Knative fails the
    revision) or the run has no rollout."""
    ready = (report.get("rollout") or {}).get("ready_s")
    return None if ready is None or ready > deadline_s else float(ready)


def rollout_stalls(reports: Sequence[Mapping], deadline_s: float) -> Estimate:
    """The fraction of replications whose new revision was not Ready within the progress deadline, with its
    Clopper–Pearson interval (`run_fraction`): the rollout term, a Bernoulli outcome per run like
    `cold_start_misses`."""
    return run_fraction([rollout_ready_s(rep, deadline_s) is None for rep in reports])


def rollout_ready_time(reports: Sequence[Mapping], deadline_s: float) -> Estimate:
    """The mean time to Ready of the new revision over the runs in which it was Ready within the deadline (a
    stalled run has no ready time: it is counted by `rollout_stalls`), with its t-interval clipped to the deadline
    (no ready time is above it): a reported figure."""
    return mean_interval((rollout_ready_s(rep, deadline_s) for rep in reports), upper=deadline_s)


def peak_pending_pods(report: Mapping) -> int:
    """Most pods waiting for a GPU node at once (Kubernetes' Pending phase), from the timeline samples of the
    measured window (after `warmup_s`)."""
    timeline = report.get("timeline") or {}
    start = report.get("warmup_s") or 0.0
    return max([p for t, p in zip(timeline.get("t") or [], timeline.get("pending_pods") or []) if t >= start] or [0])


METRICS: dict[str, tuple[str, Callable[[Mapping], Any]]] = {
    "error rate": ("rate", lambda r: (served_errors(r), r["requests"])),
    "503 rate": ("rate", lambda r: (_status(r, "503"), r["requests"])),
    "429 rate": ("rate", lambda r: (_status(r, "429"), r["requests"])),
    "504 rate": ("rate", lambda r: (_status(r, "504"), r["requests"])),
    "truncated-200 rate": ("rate", lambda r: (_status(r, "200-truncated"), r["requests"])),
    "502 rate": ("rate", lambda r: (_status(r, "502"), r["requests"])),
    "400 rate (input caps, excluded)": ("rate", lambda r: (_status(r, "400", "422"), r["requests"])),
    "p50 latency (s)": ("mean", _pct("latency_s", "p50")),  # successful requests
    "p99 latency (s)": ("p99", lambda r: r.get("latency_s") or {}),
    "p99 time to first token (s)": ("p99", lambda r: r.get("ttfb_s") or {}),
    "p99 latency, all requests (s)": ("p99", lambda r: r.get("latency_all_s") or {}),
    "throughput (req/s)": ("mean", lambda r: r["throughput_rps"]),
    "mean ready replicas": ("mean", lambda r: r["replicas"]["mean"]),
    "pod GPU-hours": ("mean", lambda r: r["pod_gpu_hours"]),
    "cold starts": ("mean", lambda r: r["cold_starts"]),
    "longest cold start (s)": ("mean", longest_cold_start),   # over the replications that had one
    "time at maxReplicas (fraction)": ("fraction", time_at_max_replicas),
    "peak Pending pods": ("mean", peak_pending_pods),
}


def without_tails(summaries: Iterable[Mapping]) -> bool:
    """Whether a run's percentile summary holds values but no `tail` to pool (not the simulator's report): its
    p99 is then the mean of the runs' own p99s."""
    return any(s.get("count") and "tail" not in s for s in summaries)


def estimate(name: str, reports: Sequence[Mapping], level: float = 0.95) -> Estimate:
    """The named METRICS figure over replications' reports, with its 95 % interval (`level`: another confidence,
    e.g. the gate's interim looks, gate/sequential.py)."""
    kind, get = METRICS[name]
    if kind == "rate":
        return rate_interval([get(r) for r in reports], level)
    if kind == "p99":
        summaries = [get(r) for r in reports]
        if without_tails(summaries):
            return mean_interval((s.get("p99") for s in summaries), level=level)
        return pooled_quantile([(s.get("count") or 0, s.get("tail")) for s in summaries], level=level)
    return mean_interval((get(r) for r in reports), upper=1.0 if kind == "fraction" else math.inf, level=level)


def estimates(reports: Sequence[Mapping], names: Iterable[str] | None = None) -> dict[str, Estimate]:
    return {name: estimate(name, reports) for name in (names or METRICS)}


def difference(name: str, before: Sequence[Mapping], after: Sequence[Mapping], paired: bool = True) -> Estimate:
    """after − before of the named METRICS figure: `paired` (common random numbers, report i of both sides on
    seed i) or independent (Welch; a rate's with r = 0). A p99 is the difference of the two sides' pooled p99s,
    as `estimate` gives them (`pooled_quantile_difference`), a rate that of their pooled rates
    (`rate_difference`); every other figure the mean difference of the runs' own values."""
    kind, get = METRICS[name]
    if kind == "rate":
        return rate_difference([get(r) for r in before], [get(r) for r in after], paired=paired)
    if kind == "p99":
        sides = [[get(r) for r in reports] for reports in (before, after)]
        if not any(map(without_tails, sides)):
            return pooled_quantile_difference(*([(s.get("count") or 0, s.get("tail")) for s in side]
                                                for side in sides), paired=paired)
    diff = paired_difference if paired else independent_difference
    return diff(per_replication(name, before), per_replication(name, after))


def per_replication(name: str, reports: Sequence[Mapping]) -> list[float | None]:
    """Each replication's own value of a METRICS figure (a rate as k/n; a p99 the run's own)."""
    kind, get = METRICS[name]
    if kind == "rate":
        return [k / n if n else 0.0 for k, n in (get(r) for r in reports)]
    if kind == "p99":
        return [get(r).get("p99") for r in reports]
    return [get(r) for r in reports]

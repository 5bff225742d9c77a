"""The per-service lines under `preflight check`'s SLO table: figures across replications with 95 % intervals.

Labelled so nothing is silently left out: latency of successful requests and of all requests (failures counted at
the time they failed), the input-cap 400s the gate's error rate excludes, the GPU-hours of the service's own pods
(not the node group's), and saturation (time the autoscaler wanted maxReplicas, peak Pending pods; a service
pinned at minReplicas = maxReplicas is at its maximum by construction, so only its Pending pods count).
"""

from __future__ import annotations

from gate.verdict import Verdict, format_estimate
from simulation.estimates import Estimate


def _e(e: Estimate | None, pct: bool = False) -> str:
    return format_estimate(e, pct, digits=3)


def service_lines(v: Verdict) -> list[str]:
    m = v.metrics.get
    r = v.report
    requests = r["requests"]
    lines = [f"{v.label}: {v.replications} replications of {r['duration_s']:g} s (95% intervals across them; "
             f"replication 0: {requests} requests {r['status_counts']})",
             f"  latency p99: successes {_e(m('p99 latency (s)'))} s; all requests "
             f"{_e(m('p99 latency, all requests (s)'))} s; p50 (successes) {_e(m('p50 latency (s)'))} s",
             f"  errors counted by the gate {_e(m('error rate'), True)}; input-cap 400s excluded from it "
             f"{_e(m('400 rate (input caps, excluded)'), True)}",
             f"  GPU-hours of its pods {_e(m('pod GPU-hours'))}; ready replicas (mean) {_e(m('mean ready replicas'))}; "
             f"cold starts {_e(m('cold starts'))}; longest (runs with one) {_e(m('longest cold start (s)'))} s; "
             f"restarts (replication 0) {r['pod_restarts']}"]
    at_max, pending = m("time at maxReplicas (fraction)"), m("peak Pending pods")
    fixed = fixed_size(r)
    if not fixed and ((at_max and at_max.value) or (pending and pending.value)):
        lines.append(f"  SATURATED: wanted maxReplicas {_e(at_max, True)} of the time; peak Pending pods "
                     f"{_e(pending)}")
    elif fixed and pending and pending.value:   # pinned at min = max: only pods without a node say anything
        lines.append(f"  SATURATED: fixed at {fixed} replicas (minReplicas = maxReplicas); peak Pending pods "
                     f"{_e(pending)}")
    return lines


def fixed_size(report: dict) -> int | None:
    """The replica count when the autoscaler has no room (min = max), else None. Such a service
    is "at maxReplicas" all the time by construction: not a saturation signal anyone can act on by autoscaling,
    so the report and the advice leave it out (slow requests or queue 503s still show what it lacks)."""
    svc = report.get("service") or {}
    lo, hi = svc.get("min_scale", svc.get("min_replicas")), svc.get("max_scale", svc.get("max_replicas"))
    return int(hi) if hi and lo == hi else None

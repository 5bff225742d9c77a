"""The per-service lines under `preflight check`'s SLO table: figures across replications with 95 % intervals.

Labelled so nothing is silently left out: latency of successful requests and of all requests (failures counted at
the time they failed), the input-cap 400s the gate's error rate excludes, the GPU-hours of the service's own pods
(not the node group's), CUDA OOMs (replication 0's server counters: a server that answers 500 and keeps serving
shows no restart, so its OOMs are named here), and saturation (time the autoscaler wanted maxReplicas, peak
Pending pods; a service pinned at minReplicas = maxReplicas is at its maximum by construction, so only its
Pending pods count). `not_simulated` names the services the SLO gate does not simulate, for the verdict line.
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
    warmup = f", the first {r['warmup_s']:g} s not measured" if r.get("warmup_s") else ""
    lines = [f"{v.label}: {v.replications} replications of {r['duration_s']:g} s{warmup} (95% intervals across them; "
             f"replication 0: {requests} requests {r['status_counts']})",
             f"  latency p99: successes {_e(m('p99 latency (s)'))} s; all requests "
             f"{_e(m('p99 latency, all requests (s)'))} s; p50 (successes) {_e(m('p50 latency (s)'))} s",
             f"  errors counted by the gate {_e(m('error rate'), True)}; input-cap 400s excluded from it "
             f"{_e(m('400 rate (input caps, excluded)'), True)}",
             f"  GPU-hours of its pods {_e(m('pod GPU-hours'))}; ready replicas (mean) {_e(m('mean ready replicas'))}; "
             f"cold starts {_e(m('cold starts'))}; longest (runs with one) {_e(m('longest cold start (s)'))} s; "
             f"restarts (replication 0) {r['pod_restarts']}"]
    events, failed, crashes = oom_counts(r)
    if events:
        lines.append(f"  CUDA OOM (replication 0): {events} OOM events"
                     + (f"; {failed} requests failed with 500 (the server kept serving)" if failed else "")
                     + (f"; {crashes} crashed the server (502s for its in-flight requests)" if crashes else ""))
    at_max, pending = m("time at maxReplicas (fraction)"), m("peak Pending pods")
    fixed = fixed_size(r)
    if not fixed and ((at_max and at_max.value) or (pending and pending.value)):
        lines.append(f"  SATURATED: wanted maxReplicas {_e(at_max, True)} of the time; peak Pending pods "
                     f"{_e(pending)}")
    elif fixed and pending and pending.value:   # pinned at min = max: only pods without a node say anything
        lines.append(f"  SATURATED: fixed at {fixed} replicas (minReplicas = maxReplicas); peak Pending pods "
                     f"{_e(pending)}")
    return lines


def oom_counts(report: dict) -> tuple[int, int, int]:
    """(OOM events, requests failed by them, crashes) from the servers' counters in replication 0's report: with
    `oom: request` a CUDA OOM fails its batch with 500 and the server keeps serving; with `oom: process` it
    crashes the pod (502 for its in-flight requests). Here, not in preflight/advice.py (which imports this module),
    so the summary line and the advice read one count."""
    stats = report.get("server_stats") or {}
    crashes = int(stats.get("oom_crashes") or 0)
    return max(int(stats.get("oom_events") or 0), crashes), int(stats.get("oom_request_failures") or 0), crashes


def fixed_size(report: dict) -> int | None:
    """The replica count when the autoscaler has no room (min = max), else None. Such a service
    is "at maxReplicas" all the time by construction: not a saturation signal anyone can act on by autoscaling,
    so the report and the advice leave it out (slow requests or queue 503s still show what it lacks)."""
    svc = report.get("service") or {}
    lo, hi = svc.get("min_scale", svc.get("min_replicas")), svc.get("max_scale", svc.get("max_replicas"))
    return int(hi) if hi and lo == hi else None


def not_simulated(cfg) -> dict[str, str]:
    """Service → why the SLO gate did not simulate it (gate.enabled false, or no workload or SLO): a pass says
    nothing about how these behave under load."""
    if cfg is None:
        return {}
    if not cfg.gate.enabled:
        return {s.name: "gate.enabled is false" for s in cfg.services}
    return {s.name: "no workload or SLO" for s in cfg.services if s.workload is None or s.slo is None}


def verdict_suffix(cfg) -> str:
    """What the `pass stack X` / `FAIL stack X` line adds: the services the SLO gate did not simulate."""
    skipped = not_simulated(cfg)
    if not skipped:
        return ""
    if cfg.services and len(skipped) == len(cfg.services) and not cfg.gate.enabled:
        return " (SLO gate: off, gate.enabled is false: no service simulated)"
    reasons: dict[str, list[str]] = {}
    for name, why in skipped.items():
        reasons.setdefault(why, []).append(name)
    return " (SLO gate: " + "; ".join(f"{', '.join(names)} not simulated: {why}"
                                      for why, names in reasons.items()) + ")"

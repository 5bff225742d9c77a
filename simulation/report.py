"""The run's summary: `Report.to_dict()` (the `--json` object) and a `rich` table.

Definitions (window W = [warmup_s, duration_s), T = duration_s − warmup_s; see docs/simulation.md):
- requests: user requests whose first attempt arrived in W; status_counts: status of each one's final attempt,
  `unanswered` for one still open at the horizon duration_s + drain_s (simulation/horizon.py; an error; its
  latency counted to the horizon); incomplete: attempts in flight and retries pending at the horizon (all).
- error_rates[code] = count/requests (error_rate_total: all non-200); `ci95` is the wider of a ratio-estimator
  t-interval over 20 time batches by arrival (Σk/Σn, each batch weighted by its requests, as the gate pools
  replications) and the Clopper–Pearson exact interval — batches cover correlation between neighbouring
  requests, Clopper–Pearson covers rare events (a batch interval collapses to a point when no batch saw an error).
- latency_s / ttfb_s: percentiles of successful requests, from first arrival to the last byte / first byte;
  latency_all_s: of every answered request, a failure counted at the time it failed (a 504 after the timeout).
  all three exact up to 65,536 requests, beyond that from a log histogram within 0.1 % relative error (count,
  mean and max stay exact; `simulation/quantiles.py`), so memory stays flat however long the run.
- littles_law: L = time-average number of attempts in the system over W (from the running count); λ = attempts
  sent in W / T; W̄ = their mean sojourn; rel_diff = |L − λW̄| / L (small when T ≫ W̄, the steady-state law);
  L_from_requests = Σ over attempts of the part of their sojourn inside W, / T — equal to L exactly when no
  request is lost or double counted (bookkeeping_rel_diff), whatever the load.
- cold_starts, cold_start_s: pods created in the run that became Ready, creation → first Ready (failed start-up
  attempts and back-off included: `restarts_s` in cold_start_phases_mean_s); cold_start_censored: pods still not
  Ready at the horizon (count, longest wait so far: each cold start is longer than its wait).
- replicas: Ready pods (time-weighted mean, min, max over W); gpu_hours: node GPUs × time over W (billed);
  pod_gpu_hours: GPUs held by pods × time over W.
- server_stats: the model servers' counters summed over all pods, whole run (rejected_400, oom_events,
  oom_crashes, oom_request_failures, completed; vLLM V1 preemptions).
Floats are rounded to 6 significant digits and keys sorted, so equal runs give byte-identical JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulation.analytic import batch_means_ci, clopper_pearson
from simulation.autoscaler.hpa import MAX_REPLICAS
from simulation.estimates import rate_interval
from simulation.request import status_label


def _r(x: float) -> float | None:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return float(f"{x:.6g}")


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    return _r(float(obj))


def _around(estimate: float, lo: float, hi: float) -> list[float]:
    """A time's interval: never below 0 and always containing its estimate (batch means centre elsewhere)."""
    return [max(0.0, min(lo, estimate)), max(hi, estimate)]


def _pct(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "max": None, "count": 0}
    a = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"p50": p50, "p95": p95, "p99": p99, "mean": float(a.mean()), "max": float(a.max()), "count": len(values)}


@dataclass
class Report:
    data: dict

    def to_dict(self) -> dict:
        return json.loads(self.to_json())

    def to_json(self) -> str:
        return json.dumps(_clean(self.data), sort_keys=True, separators=(",", ":"))

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def render(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.table import Table
        d = self.to_dict()
        console = console or Console()
        t = Table(title=f"{d['scenario']} — {d['mode']} mode, seed {d['seed']}, {d['duration_s']:g} s simulated")
        t.add_column("metric")
        t.add_column("value", justify="right")
        t.add_row("requests", f"{d['requests']}")
        for code, n in sorted(d["status_counts"].items()):
            comps = d["errors_by_component"].get(code, {})
            who = ", ".join(f"{c} {k}" for c, k in sorted(comps.items()))
            rate = d["error_rates"].get(code)
            extra = f"  {rate['rate']:.4%} [{rate['ci95'][0]:.4%}, {rate['ci95'][1]:.4%}]" if rate else ""
            label = f"HTTP {code}" if code[:3].isdigit() else code
            t.add_row(label, f"{n}{extra}" + (f"  ({who})" if who else ""))
        lat = d["latency_s"]
        if lat["count"]:
            t.add_row("latency p50/p95/p99 (s), successes", f"{lat['p50']:.3f} / {lat['p95']:.3f} / {lat['p99']:.3f}")
        la = d["latency_all_s"]
        if la["count"] and la["count"] != lat["count"]:
            t.add_row("latency p50/p95/p99 (s), all requests", f"{la['p50']:.3f} / {la['p95']:.3f} / {la['p99']:.3f}")
            tt = d["ttfb_s"]
            t.add_row("time to first byte p50/p99 (s)", f"{_fmt(tt['p50'])} / {_fmt(tt['p99'])}")
        t.add_row("attempts (retries)", f"{d['attempts']['count']} ({d['attempts']['retries']})")
        t.add_row("cold starts / pod restarts", f"{d['cold_starts']} / {d['pod_restarts']}")
        cs, cens = d["cold_start_s"], d["cold_start_censored"]
        if cs["max"] is not None or cens["count"]:
            longest = "n/a" if cs["max"] is None else f"{cs['max']:.1f}"
            more = (f"; {cens['count']} not Ready at the end, waiting up to {cens['max_s']:.1f} s"
                    if cens["count"] else "")
            t.add_row("cold start p50 / max (s)", ("n/a" if cs["p50"] is None else f"{cs['p50']:.1f}") +
                      f" / {longest}{more}")
        r = d["replicas"]
        t.add_row("ready replicas min/mean/max", f"{r['min']} / {r['mean']:.2f} / {r['max']}")
        t.add_row("GPU-hours (nodes / pods)", f"{d['gpu_hours']:.3f} / {d['pod_gpu_hours']:.3f}")
        st = d.get("server_stats") or {}
        if st.get("preemptions") or st.get("oom_events"):
            t.add_row("vLLM preemptions / CUDA OOMs", f"{st.get('preemptions', 0)} / {st.get('oom_events', 0)}")
        console.print(t)  # Little's law stays in the JSON: a bookkeeping check for tests, not a user's figure


def _fmt(value: float | None) -> str:
    """A latency for the table; n/a where no request got that far (every one failed first)."""
    return "n/a" if value is None else f"{value:.3f}"


def _counts(table: dict[tuple[int, str], int]) -> tuple[dict, dict]:
    status: dict[str, int] = {}
    comps: dict[str, dict[str, int]] = {}
    for (code, comp), n in sorted(table.items()):
        label = status_label(code)
        status[label] = status.get(label, 0) + n
        if code != 200:
            comps.setdefault(label, {})[comp] = comps.get(label, {}).get(comp, 0) + n
    return status, comps


def _rate(k: int, n: int, batch_k: list[int], batch_n: list[int]) -> dict:
    """The pooled rate k/n with the wider of the Clopper–Pearson interval and the ratio estimator's and Korn and
    Graubard's over the batches (`simulation.estimates.rate_interval`, as the gate pools replications): batches with
    few requests weigh
    less, so the interval is around k/n. An unweighted mean of per-batch ratios is a different, biased figure
    (standard-hpa: 16.3 % pooled, its interval [0.95 %, 17.2 %])."""
    rate = k / n if n else 0.0
    lo, hi = clopper_pearson(k, n)
    batches = [(bk, bn) for bk, bn in zip(batch_k, batch_n) if bn > 0]
    if len(batches) >= 10:
        est = rate_interval(batches)
        lo, hi = min(lo, est.lo, rate), max(hi, est.hi, rate)
    return {"rate": rate, "ci95": [lo, hi], "count": k}


def _server_stats(sim: Any) -> dict[str, int]:
    """The model servers' own counters (GPU servers: 400s, OOMs, vLLM preemptions), summed over every pod
    of the run (whole run, warm-up included)."""
    out: dict[str, int] = {}
    for server in getattr(sim, "servers", ()):
        for key, n in getattr(server, "stats", {}).items():
            out[key] = out.get(key, 0) + n
    return dict(sorted(out.items()))


def build_report(sim: Any) -> Report:
    sc = sim.scenario
    rec = sim.rec
    T = sc.duration_s - sc.warmup_s
    status, comps = _counts(rec.final)
    a_status, a_comps = _counts(rec.attempts)
    n = rec.n_final
    rates = {}
    for code, arr in sorted(rec.b_err.items()):
        k = sum(arr)
        rates[status_label(code)] = _rate(k, n, arr, rec.b_req)
    tot = [sum(v[i] for v in rec.b_err.values()) for i in range(rec.nb)]
    total_rate = _rate(sum(tot), n, tot, rec.b_req)
    # queue wait (arrival → server start), batch means over attempts that reached a server
    waits = [w / c for w, c in zip(rec.b_wait, rec.b_wait_n) if c > 0]
    w_all = sum(rec.b_wait_n)
    _, wlo, whi = batch_means_ci(waits)
    wait_mean = (sum(rec.b_wait) / w_all) if w_all else 0.0
    wait = {"mean": wait_mean, "ci95": _around(wait_mean, wlo, whi), "count": w_all}
    # Little's law over W, with batch means for L
    snaps = sim.snap_sys
    blen = T / rec.nb
    L_b = [(snaps[i + 1] - snaps[i]) / blen for i in range(len(snaps) - 1)]
    L = (snaps[-1] - snaps[0]) / T if len(snaps) > 1 else 0.0
    _, llo, lhi = batch_means_ci(L_b)
    lam = rec.n_attempts / T
    Wbar = sum(rec.b_soj) / rec.n_attempts if rec.n_attempts else 0.0
    L_req = rec.overlap / T
    little = {"L": L, "L_ci95": [llo, lhi], "lambda": lam, "W": Wbar, "lambda_W": lam * Wbar,
              "rel_diff": abs(L - lam * Wbar) / L if L > 0 else 0.0,
              "L_from_requests": L_req, "bookkeeping_rel_diff": abs(L - L_req) / L if L > 0 else 0.0}
    gpu = sim.snap_gpu
    gpu_h = (gpu[-1][0] - gpu[0][0]) / 3600.0 if len(gpu) > 1 else 0.0
    pod_gpu_h = (gpu[-1][1] - gpu[0][1]) / 3600.0 if len(gpu) > 1 else 0.0
    ready_mean = (sim.snap_ready[-1] - sim.snap_ready[0]) / T if len(sim.snap_ready) > 1 else 0.0
    phases: dict[str, float] = {}
    for ph in sim.cold_phases:
        for k, v in ph.items():
            phases[k] = phases.get(k, 0.0) + v
    phases = {k: v / len(sim.cold_phases) for k, v in sorted(phases.items())} if sim.cold_phases else {}
    cs = _pct(sim.cold_starts)
    latency = rec.latency.summary() | {"tail": rec.latency.tail()}   # tails: pooled p99s across runs (gate)
    _, llo2, lhi2 = batch_means_ci([a / c for a, c in zip(rec.b_lat, rec.b_lat_n) if c > 0])
    latency["mean_ci95"] = _around(latency["mean"], llo2, lhi2) if latency["count"] else [0.0, 0.0]
    series = sim.series
    sv = sc.serving
    if sv.mode == "Knative":
        k = sv.kpa
        service = {"name": sv.name, "mode": sv.mode, "container_concurrency": sv.container_concurrency,
                   "timeout_s": sv.timeout_s, "autoscaler": "kpa", "metric": k.metric, "min_scale": k.min_scale,
                   "max_scale": k.max_scale, "initial_scale": k.initial_scale, "target_value": k.target_value,
                   "total_value": k.total_value, "target_burst_capacity": k.target_burst_capacity,
                   "stable_window_s": k.stable_window_s, "panic_window_s": k.panic_window_s,
                   "scale_down_delay_s": k.scale_down_delay_s, "gpus_per_pod": sv.gpus}
    else:
        h = sv.hpa
        service = {"name": sv.name, "mode": sv.mode, "autoscaler": "hpa" if h else "none", "gpus_per_pod": sv.gpus}
        if h:
            service.update({"metric": h.metric, "target": h.target, "min_replicas": h.min_replicas,
                            "max_replicas": h.max_replicas, "scale_down_window_s": h.scale_down.window_s})
    data = {
        "service": service,
        "scenario": sc.name,
        "seed": sim.seed,
        "mode": sc.serving.mode,
        "duration_s": sc.duration_s,
        "warmup_s": sc.warmup_s,
        "requests": n,
        "incomplete": rec.incomplete,
        "status_counts": status,
        "errors_by_component": comps,
        "error_rates": rates,
        "error_rate_total": total_rate,
        "throughput_rps": status.get("200", 0) / T,
        "latency_s": latency,
        "ttfb_s": rec.ttfb.summary() | {"tail": rec.ttfb.tail()},
        "latency_all_s": rec.latency_all.summary() | {"tail": rec.latency_all.tail()},
        "attempts": {"count": rec.n_attempts, "retries": sim.client.retries,
                     "retries_denied_by_budget": sim.client.retries_denied,
                     "status_counts": a_status, "errors_by_component": a_comps},
        "queue_wait_s": wait,
        "littles_law": little,
        "cold_starts": len(sim.cold_starts),
        "cold_start_s": {"p50": cs["p50"], "mean": cs["mean"], "max": cs["max"]},
        "cold_start_censored": {"count": len(sim.cold_censored), "max_s": max(sim.cold_censored, default=None)},
        "cold_start_phases_mean_s": phases,
        "pod_restarts": sim.restarts,
        "restart_reasons": dict(sorted(sim.restart_reasons.items())),
        "pods_created": sim.pods_created,
        **({"replica_cap": {"limit": MAX_REPLICAS, "desired_max": sim.desired_over_cap,
                            "note": "the autoscaler wanted more pods than the simulator runs; the ones above the "
                                    "limit were not created (on a cluster they would be Pending)"}}
           if sim.desired_over_cap else {}),
        "nodes_provisioned": sim.cluster.nodes_provisioned,
        "replicas": {"min": sim.ready_min if sim.ready_min is not None else 0, "mean": ready_mean,
                     "max": sim.ready_max},
        "replica_series": {"t": [s[0] for s in series], "ready": [s[1] for s in series],
                           "pods": [s[2] for s in series], "desired": [s[3] for s in series],
                           "nodes": [s[4] for s in series]},
        "gpu_hours": gpu_h,
        "pod_gpu_hours": pod_gpu_h,
        "server_stats": _server_stats(sim),
        "timeline": sim.timeline.to_dict(),
    }
    return Report(data)

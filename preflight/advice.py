"""What to do next, at the end of `preflight check`: on a miss, the knobs most likely to fix it; on a pass, the
deploy command.

Each suggestion is a concrete `--set` edit with a proposed value, printed as the `preflight whatif` command that
tests it on common random numbers before the stack file is touched. Which knob is read from the run itself, and
from why requests failed:
- 502s (in-flight work lost with its process or pod): a CUDA OOM crash (the server's `oom_crashes`) →
  containerConcurrency 1 in Knative mode (the queue-proxy's hard limit; Standard mode has none, so a smaller
  batch cap there) and an input cap; a lost node (the nodeLoss scenario, no OOM) → one more warm pod, so a
  second node still serves; any other restart → its reason, no knob;
- saturation (the autoscaler wanted maxReplicas a fifth of the time or more) → more replicas, and a bigger node
  group when pods were Pending (a GPU pod without a node: the guides' "GPU pods Pending" failure);
- cold starts inside the window → keep warm pods (minReplicas, initial-scale);
- queue-proxy 503s (more than 11 × containerConcurrency on a pod) → scale out earlier (scaleTarget,
  target-burst-capacity) and more minimum pods; activator 503s → at least one pod (minReplicas);
- 504s → more capacity or a longer `timeout`; 429s from the model server → its own admission limit (TGI's
  router: `limits.maxConcurrentRequests`, at least containerConcurrency; guide 004: fix the server's concurrency
  limit first, then the autoscaler's target); 429s from the gateway → its rate limit;
- a service pinned at minReplicas = maxReplicas is not "saturated" (it is at its maximum by construction): when
  it misses, the advice is to let the autoscaler add pods;
- a client timeout below the p99 latency of all requests → the slowest requests time out and so do their
  retries (guide 000 §4.3): a warning on a pass too, since the gate judges the p99 of successes;
- slow requests on an unsaturated service → lower scaleTarget (scale out earlier) or cap output tokens;
- a new revision not Ready within its progress deadline in too many rollouts → a longer deadline, fewer new pods
  at once or a shorter cold start;
- on a pass, a term no number of replications can pass (a p99 of too few values per run, a rate limit below what
  error-free runs can show) → its reason and what would let it pass, never "raise gate.replications.max".

Every suggested edit is parsed by the stack config's own loader (as `whatif` will) before it is printed: a knob
the loader refuses for that service (containerConcurrency in Standard mode, a maxReplicas the node group cannot
hold) is never suggested.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gate.verdict import COLD_START_TERM, FAIL, ROLLOUT_TERM, UNDECIDED, Verdict
from preflight.summary import fixed_size
from simulation.gpu.server_common import OOM_REASON
from stackconfig.schema import ServiceConfig, StackConfig
from validation.errors import InputError


@dataclass(frozen=True)
class Tip:
    """One suggestion: why, and the `(path, value)` edits to try (paths under the service, or `gpuNodeGroup.…`)."""

    why: str
    edits: tuple[tuple[str, object], ...]

    def sets(self, svc: ServiceConfig) -> list[str]:
        return [f"{'' if p.startswith('gpuNodeGroup') else f'services.{svc.name}.'}{p}={v}" for p, v in self.edits]

    def command(self, stack: str, svc: ServiceConfig) -> str:
        return f"{self.why}: python -m preflight whatif --stack {stack} " + " ".join(
            f"--set '{s}'" for s in self.sets(svc))


def _tip(why: str, path: str, value: object, *also: tuple[str, object]) -> Tip:
    return Tip(why, ((path, value), *also))


def crash_cause(v: Verdict) -> str:
    """Why in-flight requests got 502s in replication 0: "oom" (the server's CUDA OOM crashes), "node loss" (the
    nodeLoss scenario without an OOM), else "restarts" (another container restart, e.g. a failed start)."""
    r = v.report
    if (r.get("server_stats") or {}).get("oom_crashes") or (r.get("restart_reasons") or {}).get(OOM_REASON):
        return "oom"
    return "node loss" if v.scenario == "nodeLoss" else "restarts"


def _crash_tips(svc: ServiceConfig, v: Verdict) -> list[Tip | str]:
    cause = crash_cause(v)
    if cause == "oom":
        out: list[Tip | str] = []
        if svc.deployment_mode == "Knative" and (svc.container_concurrency or 0) != 1:
            out.append(_tip("502s from CUDA OOM crashes: one request per pod", "containerConcurrency", 1,
                            *([("scaleTarget", 1)] if svc.scale_target and svc.scale_target > 1 else [])))
        elif svc.deployment_mode != "Knative" and (svc.caps.max_batch_size or 0) > 1:
            out.append(_tip("502s from CUDA OOM crashes: a smaller batch (Standard mode has no queue-proxy to cap "
                            "requests per pod)", "limits.maxBatchSize", max(1, svc.caps.max_batch_size // 2)))
        if svc.caps.max_input_tokens is None:
            out.append(_tip("502s from CUDA OOM crashes: cap the input", "limits.maxInputTokens", 4096))
        return out
    if cause == "node loss":
        warm = svc.min_replicas + 1
        return [_tip("502s/503s from the lost node (its in-flight requests, then no pod until a new one starts): "
                     "keep one more pod warm so another node still serves", "minReplicas", warm,
                     *([("maxReplicas", warm)] if warm > svc.max_replicas else []))]
    reasons = ", ".join(f"{k} × {n}" for k, n in (v.report.get("restart_reasons") or {}).items())
    return [f"502s from container restarts ({reasons or 'no reason recorded'}): fix what makes the container "
            "exit (see its restart reasons and the plots, --plot DIR); no autoscaling knob prevents them"]


def _suggestions(cfg: StackConfig, svc: ServiceConfig, v: Verdict) -> list[Tip | str]:
    m = v.metrics
    report = v.report
    value = lambda name: (m.get(name).value if m.get(name) is not None else None) or 0.0  # noqa: E731
    comps = report.get("errors_by_component") or {}
    missed = {c.name for c in v.checks if c.status in (FAIL, UNDECIDED)}
    out: list[Tip | str] = []
    ng = cfg.node_group
    # causes first: crashed pods (CUDA OOM → 502) also show up as saturation and cold starts
    if "502" in comps and "error rate" in missed:
        out += _crash_tips(svc, v)
    fixed = fixed_size(report)   # min = max: "at maxReplicas" by construction, not saturation (summary.py)
    saturated = value("time at maxReplicas (fraction)") >= 0.2 and not fixed
    if saturated or (fixed and missed & {"p99 latency (s)", "p99 time to first token (s)", "503 rate",
                                         "error rate"}):
        more = svc.max_replicas + max(1, math.ceil(svc.max_replicas / 2))
        pending = value("peak Pending pods")
        nodes = max(ng.max_size + 1,
                    math.ceil((ng.gpu_capacity + (more - svc.max_replicas) * svc.gpus) / ng.gpus_per_node))
        grow = [("gpuNodeGroup.maxSize", nodes)] if more * svc.gpus > ng.gpu_capacity else []
        why = (f"fixed at {fixed} replicas (minReplicas = maxReplicas) and missing its SLO: let the autoscaler add "
               "pods" if fixed else
               f"saturated: wanted maxReplicas {value('time at maxReplicas (fraction)'):.0%} of the time")
        out.append(_tip(why, "maxReplicas", more, *grow))
        if pending > 0 and not grow:
            out.append(_tip(f"pods waited for a GPU node (peak {pending:.3g} Pending)", "gpuNodeGroup.maxSize", nodes))
    if value("cold starts") > 0 and (missed & {"p99 latency (s)", "p99 time to first token (s)", "503 rate",
                                               "error rate", COLD_START_TERM}):
        warm = max(svc.min_replicas + 1, math.ceil(value("mean ready replicas")))
        out.append(_tip(f"cold starts inside the window ({value('cold starts'):.3g} per run): keep pods warm",
                        "minReplicas", min(warm, svc.max_replicas)))
    if "503" in comps and ("503 rate" in missed or "error rate" in missed):
        if "queue-proxy" in comps["503"] and svc.scale_target:
            out.append(_tip("queue-proxy 503s (queue past 11 × containerConcurrency): scale out earlier",
                            "scaleTarget", max(1, svc.scale_target * 3 // 4)))
        if "activator" in comps["503"] and svc.min_replicas == 0:
            out.append(_tip("activator 503s with no pod: keep one warm", "minReplicas", 1))
    if "504" in comps and "error rate" in missed and svc.timeout_s and not saturated:
        out.append(_tip("504s: requests outlive the timeout", "timeout", min(600, svc.timeout_s * 2)))
    if "429" in comps and "error rate" in missed:
        out += _admission_tips(svc, comps["429"])
    if missed & {"p99 latency (s)", "p99 time to first token (s)"} and not out and svc.scale_target and not fixed:
        out.append(_tip("slow requests on an unsaturated service: scale out earlier", "scaleTarget",
                        max(1, svc.scale_target * 3 // 4)))
    if COLD_START_TERM in missed and not cfg.model_cache.enabled:
        out.append("longest cold start: enable the model cache (modelCache.enabled: true) so pods mount weights")
    if ROLLOUT_TERM in missed:
        [c] = [c for c in v.checks if c.name == ROLLOUT_TERM]
        out.append(f"the new revision was not Ready within its progress deadline ({c.note.split(';')[0]}): give it a "
                   "longer serving.knative.dev/progress-deadline (annotations), fewer new pods at once "
                   "(initial-scale) or a shorter cold start"
                   + ("" if cfg.model_cache.enabled else " (modelCache.enabled: true)"))
    return out


def _admission_tips(svc: ServiceConfig, by_component: dict) -> list[Tip]:
    """429s from the model server: TGI's router answers 429 above `--max-concurrent-requests` (the only server
    here with such a limit; simulation/gpu/tgi.py). Raise it to at least what the queue-proxy lets through."""
    out = []
    limit = ((svc.gateway or {}).get("rate_limit") or {}).get("rate_per_s")
    if "gateway" in by_component and limit:
        out.append(_tip(f"429s from the gateway's rate limit ({limit:g} req/s): raise it, or it throttles the "
                        "traffic the SLO is about", "gateway.rate_limit.rate_per_s", _round_up(limit * 2)))
    if "server" not in by_component or svc.engine != "tgi":
        return out
    from simulation.gpu.tgi import DEFAULT_MAX_CONCURRENT_REQUESTS

    now = svc.caps.max_concurrent_requests or DEFAULT_MAX_CONCURRENT_REQUESTS
    return out + [_tip(f"429s from TGI's router (limits.maxConcurrentRequests {now} admits fewer requests than are "
                       "sent to a pod): raise the server's own limit first", "limits.maxConcurrentRequests",
                       max(now * 2, svc.container_concurrency or 0))]


def _round_up(x: float) -> float | int:
    """`x` rounded up to 2 significant figures, for a proposed value a person would type."""
    if x <= 0:
        return x
    step = 10 ** (math.floor(math.log10(x)) - 1)
    out = float(f"{math.ceil(x / step) * step:.6g}")
    return int(out) if out.is_integer() else out


def retry_warnings(cfg: StackConfig, verdicts: list[Verdict], values: dict | None) -> list[str]:
    """Guide 000 §4.3's retry storm: a client timeout below the service's p99 latency of all requests means the
    slowest requests time out, and each retry (the same request, as slow again) times out too — every retry is
    load with no chance of success. The gate can pass on the p99 of successes while this happens, so it is said
    on a pass as well as on a miss."""
    by_name = {s.name: s for s in cfg.services}
    out, seen = [], set()
    for v in verdicts:
        svc = by_name.get(v.service)
        client = (svc.client or {}) if svc else {}
        timeout = client.get("timeout_s")
        p99 = v.metrics.get("p99 latency, all requests (s)")
        if svc is None or not timeout or p99 is None or p99.lo is None or p99.lo <= timeout or v.service in seen:
            continue
        seen.add(v.service)
        retries = client.get("max_retries", 0)
        tip = _tip(f"warning: {v.label}: the client's timeout_s {timeout:g} is below the p99 latency of all requests "
                   f"{p99.value:.3g} s (95% CI {p99.lo:.3g}–{p99.hi:.3g}), so the slowest requests time out"
                   + (f" and each of their {retries} retries times out again (a retry storm, guide 000 §4.3)"
                      if retries else "") + "; give the client a timeout above the p99, or cap output tokens",
                   "client.timeout_s", _round_up(p99.hi * 1.2))
        out.append(tip.command(cfg.stack, svc) if values is not None and accepted(values, cfg, svc, tip) else tip.why)
    return out


def accepted(values: dict, cfg: StackConfig, svc: ServiceConfig, tip: Tip) -> bool:
    """Whether the stack config's loader takes `tip`'s edits on `values` (the stack's project keys), exactly as
    `preflight whatif --set …` will parse them."""
    from preflight.overrides import apply_sets
    from stackconfig.schema import parse_stack_config

    try:
        parse_stack_config(apply_sets(values, tip.sets(svc)), cfg.project, cfg.stack)
    except InputError:
        return False
    return True


def _stack_values(cfg: StackConfig) -> dict | None:
    from preflight.overrides import stack_values

    try:
        return stack_values(cfg.stack)[1]
    except InputError:
        return None


def undecided_notes(verdicts: list[Verdict]) -> list[str]:
    """On a pass, what `gate.undecided` let through: terms still open after `gate.replications.max` (more
    replications could decide them), and terms no number of replications can pass (each with its reason)."""
    lines = []
    budget = [v for v in verdicts if v.open]
    if budget:
        lines.append(f"  (undecided after {max(v.replications for v in budget)} replications (gate.replications.max):"
                     f" {', '.join(v.label for v in budget)}; raise gate.replications.max or set gate.undecided: "
                     "fail to be strict)")
    stuck = [f"{v.label} {c.name}: {c.why_not}" for v in verdicts for c in v.undecided if not c.can_pass]
    if stuck:
        lines.append(f"  (passed with a warning, though no number of replications can pass them: {'; '.join(stuck)})")
    return lines


def next_steps(cfg: StackConfig, verdicts: list[Verdict], passed: bool, values: dict | None = None) -> list[str]:
    """Lines for the end of the report. `values`: the stack's project keys the suggestions are checked against
    (default: the stack file `cfg` was loaded from); a suggestion its loader refuses is left out."""
    values = values if values is not None else _stack_values(cfg)
    if passed:
        lines = [f"next: deploy with `pulumi stack select {cfg.stack} --create && pulumi preview --policy-pack "
                 "policy && pulumi up --policy-pack policy`"]
        lines += undecided_notes(verdicts)
        return lines + retry_warnings(cfg, verdicts, values)
    by_name = {s.name: s for s in cfg.services}
    lines, advised = [], set()
    for v in verdicts:   # steady first; one block per service (its stress misses usually share the fix)
        if v.passed or v.service in advised:
            continue
        advised.add(v.service)
        svc = by_name[v.service]
        tips, seen = [], set()
        for t in _suggestions(cfg, svc, v):
            if isinstance(t, Tip):
                if t.edits in seen or values is None or not accepted(values, cfg, svc, t):
                    continue
                seen.add(t.edits)
                t = t.command(cfg.stack, svc)
            tips.append(t)
        lines.append(f"next for {v.label}: " + ("try one of these, then `preflight check` again:" if tips else
                     "no single knob stands out; see the plots (--plot DIR) and docs/simulation.md"))
        lines.extend(f"  - {t}" for t in tips)
    return (lines or ["next: fix the manifest or policy findings above, then run `preflight check` again"]) \
        + retry_warnings(cfg, verdicts, values)

"""What to do next, at the end of `preflight check`: on a miss, the knobs most likely to fix it; on a pass, the
deploy command.

Each suggestion is a concrete `--set` edit with a proposed value, printed as the `preflight whatif` command that
tests it on common random numbers before the stack file is touched. Which knob is read from the run itself:
- saturation (the autoscaler wanted maxReplicas a fifth of the time or more) → more replicas, and a bigger node
  group when pods were Pending (a GPU pod without a node: the guides' "GPU pods Pending" failure);
- cold starts inside the window → keep warm pods (minReplicas, initial-scale);
- queue-proxy 503s (more than 11 × containerConcurrency on a pod) → scale out earlier (scaleTarget,
  target-burst-capacity) and more minimum pods; activator 503s → at least one pod (minReplicas);
- 502s (a CUDA OOM killed the process with requests in flight) → containerConcurrency 1 and input caps;
- 504s → more capacity or a longer `timeout`; 429s → the server's admission (maxBatchSize) or more pods;
- slow requests on an unsaturated service → lower scaleTarget (scale out earlier) or cap output tokens.
"""

from __future__ import annotations

import math

from gate.verdict import COLD_START_TERM, FAIL, UNDECIDED, Verdict
from stackconfig.schema import ServiceConfig, StackConfig


def _knob(stack: str, svc: ServiceConfig, path: str, value: object, why: str, *also: tuple[str, object]) -> str:
    """The what-if command that tries `path=value` (plus edits the config needs with it, e.g. scaleTarget ≤ CC)."""
    sets = []
    for p, v in ((path, value), *also):
        prefix = "" if p.startswith("gpuNodeGroup") else f"services.{svc.name}."
        sets.append(f"--set '{prefix}{p}={v}'")
    return f"{why}: python -m preflight whatif --stack {stack} " + " ".join(sets)


def _suggestions(cfg: StackConfig, svc: ServiceConfig, v: Verdict) -> list[str]:
    m = v.metrics
    report = v.report
    value = lambda name: (m.get(name).value if m.get(name) is not None else None) or 0.0  # noqa: E731
    comps = report.get("errors_by_component") or {}
    missed = {c.name for c in v.checks if c.status in (FAIL, UNDECIDED)}
    out: list[str] = []
    stack = cfg.stack
    ng = cfg.node_group
    # causes first: crashed pods (CUDA OOM → 502) also show up as saturation and cold starts
    if "502" in comps and "error rate" in missed:
        if (svc.container_concurrency or 0) != 1:
            out.append(_knob(stack, svc, "containerConcurrency", 1, "502s from CUDA OOM crashes: one request per pod",
                             *([("scaleTarget", 1)] if svc.scale_target and svc.scale_target > 1 else [])))
        if svc.caps.max_input_tokens is None:
            out.append(_knob(stack, svc, "limits.maxInputTokens", 4096, "502s from CUDA OOM crashes: cap the input"))
    saturated = value("time at maxReplicas (fraction)") >= 0.2
    if saturated:
        more = svc.max_replicas + max(1, math.ceil(svc.max_replicas / 2))
        pending = value("peak Pending pods")
        nodes = max(ng.max_size + 1,
                    math.ceil((ng.gpu_capacity + (more - svc.max_replicas) * svc.gpus) / ng.gpus_per_node))
        grow = [("gpuNodeGroup.maxSize", nodes)] if more * svc.gpus > ng.gpu_capacity else []
        out.append(_knob(stack, svc, "maxReplicas", more, f"saturated: wanted maxReplicas "
                         f"{value('time at maxReplicas (fraction)'):.0%} of the time", *grow))
        if pending > 0 and not grow:
            out.append(_knob(stack, svc, "gpuNodeGroup.maxSize", nodes,
                             f"pods waited for a GPU node (peak {pending:.3g} Pending)"))
    if value("cold starts") > 0 and (missed & {"p99 latency (s)", "p99 time to first token (s)", "503 rate",
                                               "error rate", COLD_START_TERM}):
        warm = max(svc.min_replicas + 1, math.ceil(value("mean ready replicas")))
        out.append(_knob(stack, svc, "minReplicas", min(warm, svc.max_replicas),
                         f"cold starts inside the window ({value('cold starts'):.3g} per run): keep pods warm"))
    if "503" in comps and ("503 rate" in missed or "error rate" in missed):
        if "queue-proxy" in comps["503"] and svc.scale_target:
            out.append(_knob(stack, svc, "scaleTarget", max(1, svc.scale_target * 3 // 4),
                             "queue-proxy 503s (queue past 11 × containerConcurrency): scale out earlier"))
        if "activator" in comps["503"] and svc.min_replicas == 0:
            out.append(_knob(stack, svc, "minReplicas", 1, "activator 503s with no pod: keep one warm"))
    if "504" in comps and "error rate" in missed and svc.timeout_s and not saturated:
        out.append(_knob(stack, svc, "timeout", min(600, svc.timeout_s * 2), "504s: requests outlive the timeout"))
    if "429" in comps and "error rate" in missed and svc.caps.max_batch_size:
        out.append(_knob(stack, svc, "limits.maxBatchSize", svc.caps.max_batch_size * 2,
                         "429s from the server's admission limit"))
    if missed & {"p99 latency (s)", "p99 time to first token (s)"} and not out and svc.scale_target:
        out.append(_knob(stack, svc, "scaleTarget", max(1, svc.scale_target * 3 // 4),
                         "slow requests on an unsaturated service: scale out earlier"))
    if COLD_START_TERM in missed and not cfg.model_cache.enabled:
        out.append("longest cold start: enable the model cache (modelCache.enabled: true) so pods mount weights")
    return out


def next_steps(cfg: StackConfig, verdicts: list[Verdict], passed: bool) -> list[str]:
    """Lines for the end of the report."""
    if passed:
        lines = [f"next: deploy with `pulumi stack select {cfg.stack} && pulumi preview --policy-pack policy "
                 f"&& pulumi up --policy-pack policy`"]
        undecided = [v.label for v in verdicts if v.undecided]
        if undecided:
            lines.append(f"  (undecided after {cfg.gate.max_replications} replications: {', '.join(undecided)}; "
                         "raise gate.replications.max or set gate.undecided: fail to be strict)")
        return lines
    by_name = {s.name: s for s in cfg.services}
    lines, advised = [], set()
    for v in verdicts:   # steady first; one block per service (its stress misses usually share the fix)
        if v.passed or v.service in advised:
            continue
        advised.add(v.service)
        tips = _suggestions(cfg, by_name[v.service], v)
        lines.append(f"next for {v.label}: " + ("try one of these, then `preflight check` again:" if tips else
                     "no single knob stands out; see the plots (--plot DIR) and docs/simulation.md"))
        lines.extend(f"  - {t}" for t in tips)
    return lines or ["next: fix the manifest or policy findings above, then run `preflight check` again"]

"""What to do next, at the end of `preflight check`: on a miss, the knobs most likely to fix it; on a pass, the
deploy command.

Each suggestion is a concrete `--set` edit with a proposed value, printed as the `preflight whatif` command that
tests it on common random numbers before the stack file is touched. Which knob is read from the run itself, and
from why requests failed:
- CUDA OOM, whatever the status code (the server's `oom_events`/`oom_crashes`: 500 when the server fails the
  batch and keeps serving, `oom: request`, the default for Triton and naive, as KServe's Python server and
  Triton do; 502 when it crashes) → guide 000 §5/§6's order: containerConcurrency 1 in Knative mode (the
  queue-proxy's hard limit), a smaller batch cap (for an image model: the largest batch of images at the pixel
  cap that fits in one GPU's memory, by the simulation's memory model), and an input cap (maxInputTokens, or
  maxImagePixels for an image model). These come before "more replicas": each pod OOMs on its own batch;
- other 502s (in-flight work lost with its process or pod): a lost node (the nodeLoss scenario, no OOM) → one
  more warm pod, so a second node still serves (the tip names the errors the run saw, by status code and
  component: a long cold start shows as the activator's 504s, not 502s); any other restart → its reason, no knob;
- a continuous-batching server (vLLM, TGI) saturated with containerConcurrency below a quarter of its batch cap
  (`limits.maxBatchSize`: vLLM's --max-num-seqs, TGI's --max-batch-size; else the server's default) and no OOM
  → raise containerConcurrency toward the cap and scaleTarget to about 0.75 of it, before more replicas: the
  queue-proxy lets that few requests into a pod that could batch many more (the guides' CC 1 / target 1 preset
  suits one-request-at-a-time servers, not these; ../shared/reference/vllm-v1.md);
- saturation (the autoscaler wanted maxReplicas a fifth of the time or more) → more replicas, and a bigger node
  group when pods were Pending (a GPU pod without a node: the guides' "GPU pods Pending" failure); but in the
  spike scenario, when even a typical new pod (node provision, image pull, model load, each at its median) is
  Ready only after the burst, more maxReplicas cannot help in time → that many pods held warm (minReplicas) and
  the node group's minimum nodes for them;
- cold starts inside the window → keep warm pods (minReplicas, initial-scale);
- queue-proxy 503s (more than 11 × containerConcurrency on a pod) → scale out earlier (scaleTarget,
  target-burst-capacity) and more minimum pods; activator 503s → at least one pod (minReplicas);
- 504s → more capacity or a longer `timeout`; a `timeout` below the time the server takes (the SLO's p99 latency,
  or the p99 of all requests sitting at it) with 504s or answers cut mid-stream (200-truncated) → a longer
  `timeout` first, saturated or not (more pods do not make a request faster);
- a service none of whose pods was ever Ready while its pods were Pending (the other services took the node
  group's GPUs) → a node group with a GPU for a pod of every service, not a batch setting or more replicas;
- 429s from the model server → its own admission limit (TGI's router: `limits.maxConcurrentRequests`, at least
  containerConcurrency; guide 004: fix the server's concurrency limit first, then the autoscaler's target); 429s
  from the gateway → its rate limit;
- a service pinned at minReplicas = maxReplicas is not "saturated" (it is at its maximum by construction): when
  it misses, the advice is to let the autoscaler add pods;
- a client timeout below the p99 latency of all requests → the slowest requests time out and so do their
  retries (guide 000 §4.3): a warning on a pass too, since the gate judges the p99 of successes;
- slow requests on an unsaturated service → lower scaleTarget (scale out earlier) or cap output tokens;
- a new revision not Ready within its progress deadline in too many rollouts → a longer deadline, fewer new pods
  at once or a shorter cold start;
- on a pass, a term no number of replications can pass (a p99 of too few values in all runs, a rate limit below what
  error-free runs can show) → its reason and what would let it pass, never "raise gate.replications.max".

Every suggested edit goes through the loader and `check`'s load-time checks before it is printed
(preflight/advice_fit.py): a knob the loader refuses for that service (containerConcurrency in Standard mode, a
maxReplicas the node group cannot hold) is never suggested, and one whose next rollout would not fit the node group
(a higher minReplicas) comes with the gpuNodeGroup.maxSize that holds it. The crash and OOM tips are in
preflight/advice_crash.py, the `Tip` itself in preflight/tips.py.
"""

from __future__ import annotations

import math

from gate.verdict import COLD_START_TERM, FAIL, ROLLOUT_TERM, UNDECIDED, Verdict
from manifests.inference_service import revision_timeout_s
from preflight.advice_crash import crash_cause, crash_tips, errors_seen, oom_seen, oom_tips
from preflight.advice_fit import fitted, stack_values
from preflight.summary import fixed_size
from preflight.tips import Tip, round_up
from stackconfig.schema import ServiceConfig, StackConfig


def batch_capacity(cfg: StackConfig, svc: ServiceConfig) -> int | None:
    """How many requests a continuous-batching server (vLLM, TGI) runs at once in one pod: `limits.maxBatchSize`,
    else vLLM's --max-num-seqs or TGI's --max-batch-size given in `runtime.args`/`env` (read by
    `engine_flags.engine_settings`, the reader the simulation's server keys come from: the same `max_num_seqs`), else
    the server's default (vLLM: by engine, context and GPU as the simulation resolves it, `vllm_spec.resolve_batch`,
    the engine from `engine_flags.vllm_scheduler`, the context as the manifest renders it,
    `runtimes.served_context`; TGI: its router's --max-concurrent-requests, which also bounds it); None for the
    other servers."""
    if svc.engine not in ("vllm", "tgi"):
        return None
    from simulation.engine_flags import engine_settings

    given = engine_settings(svc.engine, svc.image, svc.args, svc.env)
    seqs = svc.caps.max_batch_size or given.get("max_num_seqs")
    if svc.engine == "vllm":
        if seqs:
            return int(seqs)
        from simulation.engine_flags import vllm_scheduler
        from simulation.gpu.vllm_spec import chunks, resolve_batch
        from stackconfig.runtimes import served_context

        scheduler = vllm_scheduler(svc.env, svc.engine_profile.get("scheduler"))
        max_len = served_context(svc.engine, svc.image, svc.args, svc.caps, svc.model)
        return resolve_batch(cfg.node_group.gpu, scheduler, max_len, given.get("max_num_batched_tokens"), None,
                             chunks(scheduler, svc.model, max_len))[1]
    from simulation.gpu.tgi import DEFAULT_MAX_CONCURRENT_REQUESTS

    router = int(svc.caps.max_concurrent_requests or given.get("max_concurrent_requests")
                 or DEFAULT_MAX_CONCURRENT_REQUESTS)
    return min(int(seqs or router), router)


def _batching_tip(cfg: StackConfig, svc: ServiceConfig) -> Tip | None:
    """containerConcurrency far below a continuous-batching server's batch capacity: the queue-proxy holds back
    requests the server would batch (vLLM serves up to --max-num-seqs sequences per step; vllm-v1.md)."""
    cc, cap = svc.container_concurrency or 0, batch_capacity(cfg, svc)
    if svc.deployment_mode != "Knative" or not cc or not cap or 4 * cc >= cap:
        return None
    raised = min(cap, max(2 * cc, cap // 4))
    target = [("scaleTarget", max(1, raised * 3 // 4))] if svc.scale_metric == "concurrency" and svc.scale_target \
        else []
    return Tip.of(f"containerConcurrency {cc} lets {cc} request(s) into a pod whose {svc.engine} batches up to {cap} "
                "at once (continuous batching), so requests queue while the GPU has room: raise it toward the "
                "batch cap before buying replicas", "containerConcurrency", raised, *target)


def _timeout_cut(svc: ServiceConfig, v: Verdict) -> str:
    """Why the revision timeout (Knative's `timeout`) cuts requests the server would answer ("" when it does
    not): replication 0 had 504s (no byte before the timeout) or answers cut off mid-stream (200-truncated,
    simulation/engine.py), and the timeout is below the time the server takes: the SLO's p99 latency (the floor
    policy isvc-timeout sets) or the p99 latency of all requests, which then sits at the timeout. Said even when
    the service is saturated: more pods do not make a request faster than the timeout allows. The timeout is the
    one the revision runs (`revision_timeout_s`: Knative's 300 s when unset; none in Standard mode)."""
    timeout = revision_timeout_s(svc)
    if not timeout or svc.slo is None:
        return ""
    r = v.report
    n504 = sum(((r.get("errors_by_component") or {}).get("504") or {}).values())
    cut = (r.get("status_counts") or {}).get("200-truncated", 0)
    p99 = v.metrics.get("p99 latency, all requests (s)")
    reaches = p99 is not None and p99.value is not None and p99.value >= 0.99 * timeout
    if not (n504 or cut) or not (timeout < svc.slo.p99_latency_s or reaches):
        return ""
    what = " and ".join(x for x in (f"{n504} 504s" if n504 else "", f"{cut} answers cut off mid-stream "
                                    "(200-truncated)" if cut else "") if x)
    below = (f"its SLO's p99 latency {svc.slo.p99_latency_s:g} s" if timeout < svc.slo.p99_latency_s else
             f"the p99 latency of all requests, {p99.value:.3g} s")
    return (f"{what} in replication 0: the revision timeout {timeout:g} s is below {below}, so requests the "
            "server would answer are cut off (more pods do not make them faster)")


def _late_scale_out(cfg: StackConfig, svc: ServiceConfig, v: Verdict) -> str:
    """Why a pod added during the spike scenario's burst cannot serve it ("" when it can, or another scenario):
    even a typical new pod (`_typical_cold_start`) is Ready only after the burst has ended."""
    if v.scenario != "spike":
        return ""
    from stackconfig.stress import settings

    burst = settings("spike", svc.stress.spike.params)["duration_s"]
    ready, how = _typical_cold_start(cfg, svc)
    if ready <= burst:
        return ""
    return (f"a new pod's median cold start, {ready:.0f} s ({how}), outlasts the {burst:g}-s spike, so more "
            "maxReplicas would add pods only after it (and cost their GPUs all the same)")


def _typical_cold_start(cfg: StackConfig, svc: ServiceConfig) -> tuple[float, str]:
    """One new pod's cold start with every phase at its median (manifests/rollout.py `cold_start` at 0.5, where the
    rollout check takes a p95): node provision (none when the node group's minimum nodes hold a spare GPU for it) +
    image pull + model load (download unless cached, weights to the GPU, engine init), and how it adds up."""
    from manifests.rollout import cold_start

    ng, typical = cfg.node_group, cold_start(cfg, svc, pods=1, quantile=0.5)
    spare = ng.min_size * ng.gpus_per_node - sum(o.min_replicas * o.gpus for o in cfg.services) >= svc.gpus
    node = 0.0 if spare else typical.node_s
    how = (("a spare GPU on a warm node" if spare else f"node provision {node:.0f} s")
           + f" + image pull {typical.pull_s:.0f} s + model load {typical.load_s:.0f} s")
    return node + typical.pull_s + typical.load_s, how


def _warm_tip(cfg: StackConfig, svc: ServiceConfig, why: str, pods: int) -> Tip:
    """`pods` pods held warm (minReplicas, maxReplicas at least that) and the node group's minimum nodes for them
    and the other services' minimums, so they do not wait for a node either (minSize, desiredSize, maxSize at
    least that)."""
    ng = cfg.node_group
    others = sum(o.min_replicas * o.gpus for o in cfg.services if o is not svc)
    nodes = math.ceil((pods * svc.gpus + others) / ng.gpus_per_node)
    edits: list[tuple[str, object]] = [("minReplicas", pods)]
    if pods > svc.max_replicas:
        edits.append(("maxReplicas", pods))
    if nodes > ng.min_size:
        edits.append(("gpuNodeGroup.minSize", nodes))
        if nodes > ng.desired_size:
            edits.append(("gpuNodeGroup.desiredSize", nodes))
        if nodes > ng.max_size:
            edits.append(("gpuNodeGroup.maxSize", nodes))
    return Tip(why, tuple(edits))


def _suggestions(cfg: StackConfig, svc: ServiceConfig, v: Verdict) -> list[Tip | str]:
    m = v.metrics
    report = v.report
    value = lambda name: (m.get(name).value if m.get(name) is not None else None) or 0.0  # noqa: E731
    comps = report.get("errors_by_component") or {}
    missed = {c.name for c in v.checks if c.status in (FAIL, UNDECIDED)}
    out: list[Tip | str] = []
    ng = cfg.node_group
    # causes first: CUDA OOM (500 or 502) and crashed pods also show up as saturation and cold starts
    oom = oom_seen(v)
    if oom and "error rate" in missed:
        out += oom_tips(cfg, svc, v)
    if "502" in comps and "error rate" in missed and crash_cause(v) != "oom":
        out += crash_tips(svc, v)
    fixed = fixed_size(report)   # min = max: "at maxReplicas" by construction, not saturation (summary.py)
    saturated = value("time at maxReplicas (fraction)") >= 0.2 and not fixed
    pending = value("peak Pending pods")
    starved = m.get("mean ready replicas") is not None and value("mean ready replicas") == 0 and pending > 0
    if starved and missed:   # no pod ever ran: neither a batch setting, a timeout nor more replicas of it can serve
        others = sum(max(o.min_replicas, 1) * o.gpus for o in cfg.services if o is not svc)
        nodes = math.ceil((others + max(svc.min_replicas, 1) * svc.gpus) / ng.gpus_per_node)
        out.append(Tip.of(f"no pod of {svc.name} was ever Ready (its pods waited for a GPU node, peak "
                        f"{pending:.3g} Pending; its requests got {errors_seen(report)} in replication 0): the node "
                        f"group's {ng.gpu_capacity} GPU(s) went to the other services' pods; give it a GPU for a pod "
                        "of every service", "gpuNodeGroup.maxSize", max(nodes, ng.max_size + 1)))
    cut = _timeout_cut(svc, v) if "error rate" in missed and not starved else ""
    if cut:   # the revision timeout cuts requests the server would answer: the cause, before any capacity
        out.append(Tip.of(cut, "timeout", min(600, max(revision_timeout_s(svc) * 2,
                                                        math.ceil(svc.slo.p99_latency_s)))))
    if not starved and (saturated or (fixed and missed & {"p99 latency (s)", "p99 time to first token (s)",
                                                          "503 rate", "error rate"})):
        if not oom and (batching := _batching_tip(cfg, svc)) is not None:
            out.append(batching)
        more = svc.max_replicas + max(1, math.ceil(svc.max_replicas / 2))
        nodes = max(ng.max_size + 1,
                    math.ceil((ng.gpu_capacity + (more - svc.max_replicas) * svc.gpus) / ng.gpus_per_node))
        grow = [("gpuNodeGroup.maxSize", nodes)] if more * svc.gpus > ng.gpu_capacity else []
        why = (f"fixed at {fixed} replicas (minReplicas = maxReplicas) and missing its SLO: let the autoscaler add "
               "pods" if fixed else
               f"saturated: wanted maxReplicas {value('time at maxReplicas (fraction)'):.0%} of the time")
        late = _late_scale_out(cfg, svc, v)
        if late:   # a pod added when the burst comes is Ready after it: hold the pods before it instead
            state = (f"fixed at {fixed} replicas (minReplicas = maxReplicas)" if fixed else
                     f"saturated (wanted maxReplicas {value('time at maxReplicas (fraction)'):.0%} of the time)")
            out.append(_warm_tip(cfg, svc, f"{state} and missing its SLO in the spike; {late}: keep {more} pods "
                                 "warm", more))
        else:
            out.append(Tip.of(why, "maxReplicas", more, *grow))
            if pending > 0 and not grow:
                out.append(Tip.of(f"pods waited for a GPU node (peak {pending:.3g} Pending)", "gpuNodeGroup.maxSize",
                                nodes))
    if value("cold starts") > 0 and (missed & {"p99 latency (s)", "p99 time to first token (s)", "503 rate",
                                               "error rate", COLD_START_TERM}):
        warm = max(svc.min_replicas + 1, math.ceil(value("mean ready replicas")))
        out.append(Tip.of(f"cold starts inside the window ({value('cold starts'):.3g} per run): keep pods warm",
                        "minReplicas", min(warm, svc.max_replicas)))
    if "503" in comps and ("503 rate" in missed or "error rate" in missed):
        if "queue-proxy" in comps["503"] and svc.scale_target:
            out.append(Tip.of("queue-proxy 503s (queue past 11 × containerConcurrency): scale out earlier",
                            "scaleTarget", max(1, svc.scale_target * 3 // 4)))
        if "activator" in comps["503"] and svc.min_replicas == 0:
            out.append(Tip.of("activator 503s with no pod: keep one warm", "minReplicas", 1))
    timeout = revision_timeout_s(svc)
    if "504" in comps and "error rate" in missed and timeout and not saturated and not cut:
        out.append(Tip.of("504s: requests outlive the timeout", "timeout", min(600, timeout * 2)))
    if "429" in comps and "error rate" in missed:
        out += _admission_tips(svc, comps["429"])
    if missed & {"p99 latency (s)", "p99 time to first token (s)"} and not out and svc.scale_target and not fixed:
        out.append(Tip.of("slow requests on an unsaturated service: scale out earlier", "scaleTarget",
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
        out.append(Tip.of(f"429s from the gateway's rate limit ({limit:g} req/s): raise it, or it throttles the "
                        "traffic the SLO is about", "gateway.rate_limit.rate_per_s", round_up(limit * 2)))
    if "server" not in by_component or svc.engine != "tgi":
        return out
    from simulation.gpu.tgi import DEFAULT_MAX_CONCURRENT_REQUESTS

    now = svc.caps.max_concurrent_requests or DEFAULT_MAX_CONCURRENT_REQUESTS
    return out + [Tip.of(f"429s from TGI's router (limits.maxConcurrentRequests {now} admits fewer requests than are "
                       "sent to a pod): raise the server's own limit first", "limits.maxConcurrentRequests",
                       max(now * 2, svc.container_concurrency or 0))]


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
        tip = Tip.of(f"warning: {v.label}: the client's timeout_s {timeout:g} is below the p99 latency of all requests "
                   f"{p99.value:.3g} s (95% CI {p99.lo:.3g}–{p99.hi:.3g}), so the slowest requests time out"
                   + (f" and each of their {retries} retries times out again (a retry storm, guide 000 §4.3)"
                      if retries else "") + "; give the client a timeout above the p99, or cap output tokens",
                   "client.timeout_s", round_up(p99.hi * 1.2))
        ok = fitted(values, cfg, svc, tip) if values is not None else None
        out.append(ok.command(cfg.stack, svc) if ok is not None else tip.why)
    return out


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
    values = values if values is not None else stack_values(cfg)
    if passed:
        lines = [f"next: deploy with `pulumi stack select {cfg.stack} --create && pulumi preview --policy-pack "
                 "policy && pulumi up --policy-pack policy`"]
        lines += undecided_notes(verdicts)
        return lines + retry_warnings(cfg, verdicts, values)
    from gate.rollout_capacity import expected_loads

    by_name = {s.name: s for s in cfg.services}
    loads = expected_loads(cfg, verdicts)[0]   # what check's rollout capacity is judged at
    lines, advised = [], set()
    for v in verdicts:   # steady first; one block per service (its stress misses usually share the fix)
        if v.passed or v.service in advised:
            continue
        advised.add(v.service)
        svc = by_name[v.service]
        tips, seen = [], set()
        for t in _suggestions(cfg, svc, v):
            if isinstance(t, Tip):
                t = fitted(values, cfg, svc, t, loads) if values is not None else None
                if t is None or t.edits in seen:
                    continue
                seen.add(t.edits)
                t = t.command(cfg.stack, svc)
            tips.append(t)
        lines.append(f"next for {v.label}: " + ("try one of these, then `preflight check` again:" if tips else
                     "no single knob stands out; see the plots (--plot DIR) and docs/simulation.md"))
        lines.extend(f"  - {t}" for t in tips)
    return (lines or ["next: fix the manifest or policy findings above, then run `preflight check` again"]) \
        + retry_warnings(cfg, verdicts, values)

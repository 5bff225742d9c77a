"""Rules over how GPU InferenceServices scale: per-pod concurrency, replicas, the scaling metric and how long a
replica outlives its load (guides 000, 001, 004)."""

from __future__ import annotations

from typing import Iterator, Optional

from policy.registry import rule
from policy.bounds import (KNATIVE_MAX_SCALE, autoscaler_behavior, autoscaler_bounds, hpas_for, knative_autoscaler_data,
                           knative_bounds, replica_bounds)
from policy.resources import (ANN, MANDATORY, SCALED_OBJECT_TYPE, Context, Resource, _list, _map, annotations,
                              deployment_mode, duration_s, fmt, is_gpu_isvc, isvc_gpus, isvc_name, metadata, num,
                              predictor)
from simulation.autoscaler.cluster_config import DEFAULT as KNATIVE_AUTOSCALER_DEFAULT
from simulation.autoscaler.hpa import DEFAULT_DOWN
from validation.annotations import CLASS_ANNOTATION, KNATIVE_PREFIX


def _never_scales_out(what: str, fix: str) -> str:
    """`what` scales a GPU predictor on CPU or memory utilisation: why that never scales it out, then `fix`."""
    return f"{what}; a GPU-bound model saturates the GPU long before the CPU, so it never scales out. {fix}"


@rule("isvc-container-concurrency", MANDATORY,
      "Knative GPU predictors set containerConcurrency > 0 (a hard per-pod limit)", "000 §4, §9.3; 001 §10-2",
      is_gpu_isvc)
def _container_concurrency(res: Resource, ctx: Context) -> Iterator[str]:
    """Only Knative mode: in Standard mode there is no queue-proxy to enforce it (the batch caps rule covers it)."""
    if deployment_mode(res) != "Knative":
        return
    cc = num(predictor(res).get("containerConcurrency"))
    if not cc:
        yield (f"{res.label}: spec.predictor.containerConcurrency is {fmt(cc)} (unlimited), so every burst lands "
               "on the GPU at once (CUDA OOM; the queue-proxy queues without bound, then 503s). Set "
               "containerConcurrency to what one replica serves concurrently, e.g. the runtime's max batch "
               "(--max-num-seqs); scaleTarget at or below it.")


@rule("isvc-prod-min-replicas", MANDATORY,
      "In prod, GPU services keep minReplicas >= 1 unless preflight.kserve.io/allow-scale-to-zero is \"true\"",
      "001 §3, §10 (priority 1); 004 §2, §8", is_gpu_isvc, stack=True)
def _prod_min_replicas(res: Resource, ctx: Context) -> Iterator[str]:
    """The environment comes from the GPU node group's `environment` tag, else from the URN's stack name."""
    if ctx.environment != "prod":
        return
    bounds = replica_bounds(res, ctx)
    min_r = 1.0 if bounds.min is None else bounds.min  # KServe's default
    if min_r < 1 and str(annotations(res).get(ANN + "allow-scale-to-zero", "")).lower() != "true":
        yield (f"{res.label}: {bounds.min_field} is {fmt(min_r)} in prod, so the first request after idle waits for a "
               "GPU cold start (node, image, model load) and gets 503s/timeouts. Set minReplicas >= 1, or opt in "
               f"explicitly with the annotation {ANN}allow-scale-to-zero: \"true\" (stack: allowScaleToZero: true).")


@rule("isvc-scale-metric", MANDATORY,
      "GPU services scale on concurrency or rps (KPA) or in-flight requests (KEDA ScaledObject or HPA Pods "
      "metric), never CPU/memory",
      "004 §3, §8; 000 §4", is_gpu_isvc, stack=True)
def _scale_metric(res: Resource, ctx: Context) -> Iterator[str]:
    pred, ann = predictor(res), annotations(res)
    fix = ("Scale on in-flight work: Knative scaleMetric concurrency (or rps); in Standard mode "
           "scaleMetric: concurrency, i.e. a KEDA ScaledObject on the runtime's running + waiting requests "
           "(hpa.scaler: keda), or an HPA Pods metric through a custom-metrics adapter (hpa.scaler: hpa).")
    if deployment_mode(res) == "Knative":
        metric = str(pred.get("scaleMetric") or ann.get(KNATIVE_PREFIX + "metric") or "concurrency")
        klass = str(ann.get(KNATIVE_PREFIX + "class", ""))
        if metric not in ("concurrency", "rps") or klass.startswith("hpa."):
            yield _never_scales_out(f"{res.label}: scales on {metric!r}" + (f" with class {klass}" if klass else ""),
                                    fix)
        return
    if str(ann.get(CLASS_ANNOTATION, "hpa")) == "external":
        hpas = hpas_for(res, ctx)
        if not hpas:
            yield (f"{res.label}: autoscalerClass is external but no HorizontalPodAutoscaler or ScaledObject targets "
                   f"Deployment {isvc_name(res)}-predictor, so it never scales. Add one. " + fix)
        for hpa in hpas:
            if hpa.type == SCALED_OBJECT_TYPE:
                for t in _list(_map(hpa.props.get("spec")).get("triggers")):
                    if str(_map(t).get("type")) in ("cpu", "memory"):
                        yield _never_scales_out(f"{res.label}: {hpa.label} scales the GPU predictor on "
                                                f"{_map(t).get('type')}", fix)
                continue
            if metadata(hpa).get("name") == f"{isvc_name(res)}-predictor":
                yield (f"{res.label}: {hpa.label} has the name of KServe's own HPA; with autoscalerClass external "
                       "KServe's HPA reconciler overwrites an HPA of that name with its defaults and then deletes "
                       "it (reconcilers/hpa/hpa_reconciler.go). Give it another name, e.g. <name>-predictor-hpa.")
            for m in _list(_map(hpa.props.get("spec")).get("metrics")):
                m = _map(m)
                mtype = str(m.get("type", ""))
                if mtype in ("Resource", "ContainerResource"):
                    what = _map(m.get("resource") or m.get("containerResource")).get("name")
                    yield _never_scales_out(f"{res.label}: {hpa.label} scales the GPU predictor on {mtype} {what} "
                                            "utilisation", fix)
        return
    metric = str(pred.get("scaleMetric") or "cpu")  # KServe's HPA default
    if metric in ("cpu", "memory"):
        yield _never_scales_out(f"{res.label}: KServe's built-in HPA scales it on {metric}", "Set "
                                f"{CLASS_ANNOTATION}: external with a KEDA ScaledObject or an HPA on "
                                "in-flight requests (stack: scaleMetric: concurrency), or use Knative mode.")


@rule("isvc-max-replicas", MANDATORY,
      "maxReplicas is set and maxReplicas × GPUs per replica fits the GPU node group (maxSize × GPUs per node)",
      "001 §10-2, §10-3; 000 §9.8", is_gpu_isvc, stack=True)
def _max_replicas(res: Resource, ctx: Context) -> Iterator[str]:
    """In Knative mode an unset maxReplicas leaves the legacy `autoscaling.knative.dev/maxScale` annotation in
    force (bounds.max_replicas); `max-scale` on the InferenceService never reaches the revision. In Standard
    mode with autoscalerClass external the bounds are the HPA's or ScaledObject's (bounds.replica_bounds)."""
    bounds = replica_bounds(res, ctx)
    max_r, min_r = bounds.max, bounds.min
    if not max_r or max_r < 1:
        dropped = (f" ({KNATIVE_MAX_SCALE} on the InferenceService is on KServe's serviceAnnotationDisallowedList: "
                   "it never reaches the revision)" if KNATIVE_MAX_SCALE in annotations(res) else "")
        yield (f"{res.label}: {bounds.max_field} is {fmt(max_r)} (unbounded){dropped}, so a spike asks for more GPUs "
               "than exist and the extra pods sit Pending while the queue returns 503s. Set maxReplicas to what the "
               "GPU node group can hold.")
        return
    if min_r is not None and min_r > max_r:
        yield (f"{res.label}: {bounds.min_field} {fmt(min_r)} > {bounds.max_field} {fmt(max_r)}. Set minReplicas <= "
               "maxReplicas.")
    gpus = isvc_gpus(res)
    if ctx.gpu_capacity is not None and max_r * gpus > ctx.gpu_capacity:
        yield (f"{res.label}: {bounds.max_field} {fmt(max_r)} × {gpus} GPU(s) = {fmt(max_r * gpus)} GPUs, but the GPU "
               f"node group holds at most {ctx.gpu_capacity} (maxSize × GPUs per node); replicas beyond that stay "
               f"Pending. Lower maxReplicas to {ctx.gpu_capacity // gpus} or raise the node group's maxSize.")


# Knative's config-autoscaler defaults (pkg/autoscaler/config/config.go: stable-window 60 s, scale-down-delay 0)
# and the HPA's scaleDown stabilization window when unset (autoscaling/v2: 300 s), as the simulation models them.
KNATIVE_STABLE_WINDOW_S = KNATIVE_AUTOSCALER_DEFAULT.stable_window_s
KNATIVE_SCALE_DOWN_DELAY_S = KNATIVE_AUTOSCALER_DEFAULT.scale_down_delay_s
HPA_SCALE_DOWN_WINDOW_S = DEFAULT_DOWN.window_s
MIN_SCALE_DOWN_HOLD_S = {"spiky": 120.0,   # twice Knative's default window: the guides' example (window "120s")
                         "steady": KNATIVE_STABLE_WINDOW_S}   # never less stable than Knative's default


def _pinned(low: Optional[float], high: Optional[float]) -> bool:
    """Equal replica bounds: nothing to scale down to."""
    return low is not None and high is not None and high >= 1 and low == high


@rule("isvc-scale-down-stabilization", MANDATORY,
      "A pod is kept after its load ends (Knative stable window + scale-down delay; HPA scaleDown stabilization "
      "window) at least 120 s where traffic is spiky, and no shorter than Knative's default 60 s elsewhere",
      "004 §5, §8; 001 §5", is_gpu_isvc, stack=True)
def _scale_down(res: Resource, ctx: Context) -> Iterator[str]:
    """Traffic is spiky or steady by the `preflight.kserve.io/traffic` annotation, derived from the service's
    workload by `stackconfig.schema.traffic_shape` (gamma CV > 1, step, spike, trace; a missing annotation counts
    as spiky). A GPU replica takes minutes to bring back (node, image, model load), so removing it right after a
    burst makes it flap. Knative averages over the stable window and then holds the highest recommendation for
    the scale-down delay, so a pod outlives its load by about window + delay: with the defaults (60 s + 0) the
    next burst a minute later pays a cold start. Steady traffic may keep the defaults, but a shorter window
    ("6s", 10× less stable: the README's flapping story under waves of traffic) fails everywhere. The HPA's
    scaleDown stabilization window is the same hold (Kubernetes' default 300 s passes). A service pinned at
    equal replica bounds (Knative minReplicas = maxReplicas; an HPA's or ScaledObject's min = max) never scales
    down, so it cannot flap: quiet."""
    ann = annotations(res)
    traffic = "steady" if ann.get(ANN + "traffic", "spiky") == "steady" else "spiky"
    minimum = MIN_SCALE_DOWN_HOLD_S[traffic]
    if deployment_mode(res) == "Knative":
        if _pinned(*knative_bounds(res)):
            return
        cluster = knative_autoscaler_data(ctx, res)  # config-autoscaler as patched or declared: every revision's
        delay_text = ann.get(KNATIVE_PREFIX + "scale-down-delay", cluster.get("scale-down-delay"))
        window_text = ann.get(KNATIVE_PREFIX + "window", cluster.get("stable-window"))
        delay, window = duration_s(delay_text), duration_s(window_text)
        delay = KNATIVE_SCALE_DOWN_DELAY_S if delay is None else delay
        window = KNATIVE_STABLE_WINDOW_S if window is None else window
        if window + delay < minimum:
            shown = (f"window {window_text or f'{KNATIVE_STABLE_WINDOW_S:g}s (default)'} + scale-down-delay "
                     f"{delay_text or f'{KNATIVE_SCALE_DOWN_DELAY_S:g}s (default)'}")
            yield (f"{res.label}: {KNATIVE_PREFIX}{shown} keeps a GPU replica only ~{window + delay:g} s "
                   f"after its load ends (at least {minimum:g} s expected for {traffic} traffic), so the next burst "
                   "pays a cold start (flapping). Set scale-down-delay (e.g. \"5m\") and/or window (e.g. \"120s\").")
        return
    for hpa in hpas_for(res, ctx):
        if _pinned(*autoscaler_bounds(hpa)):
            continue
        down = _map(autoscaler_behavior(hpa).get("scaleDown"))
        set_window = num(down.get("stabilizationWindowSeconds"))
        window = HPA_SCALE_DOWN_WINDOW_S if set_window is None else set_window
        if window < minimum:
            shown = fmt(window) + (" (Kubernetes' default)" if set_window is None else "")
            yield (f"{res.label}: {hpa.label} has behavior.scaleDown.stabilizationWindowSeconds {shown} "
                   f"(at least {minimum:g} s expected for {traffic} traffic; Kubernetes' default is "
                   f"{HPA_SCALE_DOWN_WINDOW_S:g}), so replicas flap. Set it (e.g. 600) with a slow scale-down "
                   "policy (stack: hpa.behavior).")

"""The tuner's search space: one service's knobs and its node group's, as edits to the stack config values.

A trial's settings are a flat mapping (`knob name → value`); `apply` writes them into a copy of the stack's
config values (the `kserve-preflight:` keys, without the prefix), so the candidate goes through the very same
parser, manifests and gate as a hand-written change. `current` reads today's settings the same way, so the
shipped configuration is the first trial and every winner is compared with it.

Knobs (Knative services; a Standard service keeps only min/max replicas, scale target, caps, memory and nodes):
min/max replicas, `initial-scale`, `containerConcurrency`, `scaleTarget` (≤ CC, Knative caps it there),
`scale-down-delay`, `window`, the input/batch caps (`maxInputTokens` never below today's: a tighter cap refuses
requests the gate does not count as errors), `gpuMemoryUtilization` (vLLM), the instance type (priced ones
whose GPU holds the model) and the node group's size (min = desired, max).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from catalog import Catalog

CC_CHOICES = (1, 2, 4, 8, 16, 32, 64)
DELAYS = ("0s", "1m", "2m", "5m", "10m", "15m")
WINDOWS = ("60s", "120s", "180s", "300s")
INPUT_CAPS = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768)
BATCHES = (8, 16, 32, 64, 128)
UTILIZATIONS = (0.8, 0.85, 0.9, 0.95)
ANN = "autoscaling.knative.dev/"


def _service(values: dict, name: str) -> dict:
    return next(s for s in values["services"] if s.get("name") == name)


def current(values: dict, name: str) -> dict:
    """Today's settings of the service and its node group, as the knobs name them."""
    svc, ng = _service(values, name), values.get("gpuNodeGroup") or {}
    ann = svc.get("annotations") or {}
    lim = svc.get("limits") or {}
    out = {"minReplicas": svc.get("minReplicas", 1), "maxReplicas": svc["maxReplicas"],
           "scaleTarget": svc.get("scaleTarget"), "instanceType": (ng.get("instanceTypes") or ["g6e.xlarge"])[0],
           "nodeMin": ng.get("minSize", 0), "nodeMax": ng.get("maxSize", 2)}
    if svc.get("deploymentMode", "Knative") in ("Knative", "Serverless"):
        out.update(containerConcurrency=svc.get("containerConcurrency"), initialScale=int(ann.get(ANN + "initial-scale", 1)),
                   scaleDownDelay=ann.get(ANN + "scale-down-delay", "0s"), window=ann.get(ANN + "window", "60s"))
    if "maxInputTokens" in lim:
        out["maxInputTokens"] = lim["maxInputTokens"]
    if "maxBatchSize" in lim:
        out["maxBatchSize"] = lim["maxBatchSize"]
    if (svc.get("runtime") or {}).get("engine", "vllm") == "vllm":
        out["gpuMemoryUtilization"] = svc.get("gpuMemoryUtilization", 0.9)
    return out


def apply(values: dict, name: str, settings: dict) -> dict:
    """A copy of the config values with the settings written in (the node group's desired size = its min)."""
    out = copy.deepcopy(values)
    svc, ng = _service(out, name), out.setdefault("gpuNodeGroup", {})
    for key in ("minReplicas", "maxReplicas", "scaleTarget", "containerConcurrency", "gpuMemoryUtilization"):
        if settings.get(key) is not None:
            svc[key] = settings[key]
    ann = svc.setdefault("annotations", {})
    for key, ann_key in (("initialScale", "initial-scale"), ("scaleDownDelay", "scale-down-delay"), ("window", "window")):
        if key in settings:
            ann[ANN + ann_key] = str(settings[key])
    for key in ("maxInputTokens", "maxBatchSize"):
        if key in settings:
            svc.setdefault("limits", {})[key] = settings[key]
    if "instanceType" in settings:
        ng["instanceTypes"] = [settings["instanceType"]]
    if "nodeMax" in settings:
        ng.update(maxSize=settings["nodeMax"], minSize=settings["nodeMin"], desiredSize=settings["nodeMin"])
    return out


def _fits(catalog: Catalog, instance: str, gpus_per_pod: int, weights_gib: float) -> bool:
    inst = catalog.instances[instance]
    return inst.gpus >= gpus_per_pod and catalog.gpus[inst.gpu].memory_gib * gpus_per_pod * 0.95 > weights_gib


def _choices(options: tuple, today: Any) -> list:
    """The options plus today's value (so the shipped settings are a point of the space)."""
    return sorted(set(options) | ({today} if today is not None else set()), key=lambda v: (str(type(v)), v))


KNOBS = ("instanceType", "minReplicas", "maxReplicas", "nodeMax", "nodeMin", "containerConcurrency", "scaleTarget",
         "initialScale", "scaleDownDelay", "window", "maxInputTokens", "maxBatchSize", "gpuMemoryUtilization")


def suggest(trial: Any, values: dict, name: str, catalog: Catalog, prices: dict, model: Any,
            gpus_per_pod: int, others_min_gpus: int, knobs: tuple[str, ...] | None = None) -> dict:
    """One trial's settings from an optuna trial (same seed → same sequence of settings). Knobs outside
    `knobs` (None: all) keep today's value."""
    svc = _service(values, name)
    today = current(values, name)
    knative = "containerConcurrency" in today or "initialScale" in today

    def pick(knob: str, draw: Any) -> Any:
        return draw() if knobs is None or knob in knobs else today.get(knob)

    types = sorted(t for t in prices if t in catalog.instances and _fits(catalog, t, gpus_per_pod, model.weights_gib))
    s: dict = {"instanceType": pick("instanceType", lambda: trial.suggest_categorical(
        "instanceType", _choices(tuple(types), today["instanceType"])))}
    per_node = catalog.instances[s["instanceType"]].gpus
    hi = max(today["maxReplicas"] * 2, 4)
    if knobs is not None and "nodeMax" not in knobs:   # the node group stays: replicas within its GPUs
        hi = max(1, min(hi, (today["nodeMax"] * per_node - others_min_gpus) // gpus_per_pod))
    zero_ok = knative and svc.get("allowScaleToZero", values.get("environment", "") != "prod")
    s["minReplicas"] = pick("minReplicas", lambda: trial.suggest_int("minReplicas", 0 if zero_ok else 1,
                                                                     max(1, today["maxReplicas"])))
    s["maxReplicas"] = pick("maxReplicas", lambda: trial.suggest_int("maxReplicas", max(1, s["minReplicas"]), hi))
    need = (s["maxReplicas"] * gpus_per_pod + others_min_gpus)
    node_hi = max(math.ceil(need / per_node), 1)
    s["nodeMax"] = pick("nodeMax", lambda: trial.suggest_int("nodeMax", node_hi, node_hi * 2))
    s["nodeMin"] = pick("nodeMin", lambda: trial.suggest_int("nodeMin", 0, s["nodeMax"]))
    if knative:
        s["containerConcurrency"] = pick("containerConcurrency", lambda: trial.suggest_categorical(
            "containerConcurrency", _choices(CC_CHOICES, today["containerConcurrency"])))
        s["scaleTarget"] = pick("scaleTarget", lambda: trial.suggest_int("scaleTarget", 1, s["containerConcurrency"]))
        s["initialScale"] = pick("initialScale", lambda: trial.suggest_int("initialScale", 1, s["maxReplicas"]))
        s["scaleDownDelay"] = pick("scaleDownDelay", lambda: trial.suggest_categorical(
            "scaleDownDelay", _choices(DELAYS, today["scaleDownDelay"])))
        s["window"] = pick("window", lambda: trial.suggest_categorical("window", _choices(WINDOWS, today["window"])))
    else:
        s["scaleTarget"] = pick("scaleTarget", lambda: trial.suggest_int("scaleTarget", 1, 64))
    if "maxInputTokens" in today:
        ctx = model.max_context or 10**9
        new = (svc.get("limits") or {}).get("maxNewTokens", 0)
        caps = [c for c in INPUT_CAPS if today["maxInputTokens"] <= c <= ctx - new] or [today["maxInputTokens"]]
        s["maxInputTokens"] = pick("maxInputTokens", lambda: trial.suggest_categorical("maxInputTokens", caps))
    if "maxBatchSize" in today:
        s["maxBatchSize"] = pick("maxBatchSize", lambda: trial.suggest_categorical(
            "maxBatchSize", _choices(BATCHES, today["maxBatchSize"])))
    if "gpuMemoryUtilization" in today:
        s["gpuMemoryUtilization"] = pick("gpuMemoryUtilization", lambda: trial.suggest_categorical(
            "gpuMemoryUtilization", _choices(UTILIZATIONS, today["gpuMemoryUtilization"])))
    return s


def as_params(settings: dict) -> dict:
    """Today's settings as optuna parameters (`enqueue_trial`), within the choices where they are not."""
    return {k: v for k, v in settings.items() if v is not None}

"""The tuner's search space: one service's knobs and its node group's, as edits to the stack config values.

A trial's settings are a flat mapping (`knob name → value`); `apply` writes them into a copy of the stack's
config values (the `kserve-preflight:` keys, without the prefix), so the candidate goes through the very same
parser, manifests and gate as a hand-written change. `current` reads today's settings from the parsed config
(loader defaults, the cluster's `knative.autoscaler` where the service sets no annotation), and a candidate
writes only the knobs it changes (`changed`), so the shipped configuration, unedited, is the first trial and
every winner is compared with it.

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
from stackconfig.types import StackConfig
from validation.annotations import KNATIVE_PREFIX as ANN

CC_CHOICES = (1, 2, 4, 8, 16, 32, 64)
DELAYS = ("0s", "1m", "2m", "5m", "10m", "15m")
WINDOWS = ("60s", "120s", "180s", "300s")
INPUT_CAPS = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768)
BATCHES = (8, 16, 32, 64, 128)
UTILIZATIONS = (0.8, 0.85, 0.9, 0.95)


def _service(values: dict, name: str) -> dict:
    return next(s for s in values["services"] if s.get("name") == name)


def _duration(seconds: float) -> str:
    return f"{seconds:g}s"


def current(cfg: StackConfig, name: str) -> dict:
    """Today's settings of the service and its node group, as the knobs name them: what the parsed stack runs
    with (the loader's defaults where a key is unset), and for the Knative annotations the cluster's
    `knative.autoscaler` value where the service sets none (decider.go MakeDecider: config-autoscaler applies
    to every revision without the annotation)."""
    svc = next(s for s in cfg.services if s.name == name)
    ng, cluster = cfg.node_group, cfg.knative.autoscaler
    given = cluster.data()   # the cluster's keys as the stack writes them ("5m"), else Knative's defaults
    out = {"minReplicas": svc.min_replicas, "maxReplicas": svc.max_replicas, "scaleTarget": svc.scale_target,
           "instanceType": ng.instance_types[0], "nodeMin": ng.min_size, "nodeMax": ng.max_size}
    if svc.deployment_mode == "Knative":
        ann = svc.annotations
        out.update(containerConcurrency=svc.container_concurrency,
                   initialScale=int(ann.get(ANN + "initial-scale", cluster.initial_scale)),
                   scaleDownDelay=ann.get(ANN + "scale-down-delay",
                                          given.get("scale-down-delay", _duration(cluster.scale_down_delay_s))),
                   window=ann.get(ANN + "window", given.get("stable-window", _duration(cluster.stable_window_s))))
    if svc.caps.max_input_tokens is not None:
        out["maxInputTokens"] = svc.caps.max_input_tokens
    if svc.caps.max_batch_size is not None:
        out["maxBatchSize"] = svc.caps.max_batch_size
    if svc.engine == "vllm":
        out["gpuMemoryUtilization"] = svc.gpu_memory_utilization
    return out


def changed(settings: dict, today: dict) -> dict:
    """The settings that differ from today's: what a candidate writes into the stack, so a knob it keeps stays as
    the stack has it (unset, or the cluster's value). The node group's bounds go together (desired = min)."""
    out = {k: v for k, v in settings.items() if v != today.get(k)}
    if "nodeMin" in out or "nodeMax" in out:
        out.update({k: settings.get(k, today.get(k)) for k in ("nodeMin", "nodeMax")})
    return out


def apply(values: dict, name: str, settings: dict) -> dict:
    """A copy of the config values with the settings written in (`changed` first, to write only what a candidate
    changes); the node group's desired size = its min."""
    out = copy.deepcopy(values)
    svc, ng = _service(out, name), out.setdefault("gpuNodeGroup", {})
    for key in ("minReplicas", "maxReplicas", "scaleTarget", "containerConcurrency", "gpuMemoryUtilization"):
        if settings.get(key) is not None:
            svc[key] = settings[key]
    for key, ann_key in (("initialScale", "initial-scale"), ("scaleDownDelay", "scale-down-delay"),
                         ("window", "window")):
        if key in settings:
            svc.setdefault("annotations", {})[ANN + ann_key] = str(settings[key])
    for key in ("maxInputTokens", "maxBatchSize"):
        if key in settings:
            svc.setdefault("limits", {})[key] = settings[key]
    if "instanceType" in settings:
        ng["instanceTypes"] = [settings["instanceType"]]
    if "nodeMax" in settings:
        ng["maxSize"] = settings["nodeMax"]
    if "nodeMin" in settings:
        ng.update(minSize=settings["nodeMin"], desiredSize=settings["nodeMin"])
    return out


def _fits(catalog: Catalog, instance: str, gpus_per_pod: int, weights_gib: float) -> bool:
    inst = catalog.instances[instance]
    return inst.gpus >= gpus_per_pod and catalog.gpus[inst.gpu].memory_gib * gpus_per_pod * 0.95 > weights_gib


def _choices(options: tuple, today: Any) -> list:
    """The options plus today's value (so the shipped settings are a point of the space)."""
    return sorted(set(options) | ({today} if today is not None else set()), key=lambda v: (str(type(v)), v))


KNOBS = ("instanceType", "minReplicas", "maxReplicas", "nodeMax", "nodeMin", "containerConcurrency", "scaleTarget",
         "initialScale", "scaleDownDelay", "window", "maxInputTokens", "maxBatchSize", "gpuMemoryUtilization")


def suggest(trial: Any, cfg: StackConfig, name: str, prices: dict, knobs: tuple[str, ...] | None = None) -> dict:
    """One trial's settings from an optuna trial (same seed → same sequence of settings). Knobs outside
    `knobs` (None: all) keep today's value."""
    svc = next(s for s in cfg.services if s.name == name)
    catalog, model, gpus_per_pod = cfg.catalog, svc.model, svc.gpus
    others_min_gpus = sum(o.min_replicas * o.gpus for o in cfg.services if o is not svc)
    today = current(cfg, name)
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
    zero_ok = knative and svc.allow_scale_to_zero
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
        new = svc.caps.max_new_tokens or 0
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


class _Walk:
    """An optuna-like trial that answers each `suggest_*` from a fixed path of choice indices (index 0 past its
    end) and records how many choices each one had: `points` walks every path of `suggest`'s define-by-run
    space with it."""

    def __init__(self, path: list[int]) -> None:
        self.path, self.widths = path, []

    def _pick(self, options: list) -> Any:
        i = self.path[len(self.widths)] if len(self.widths) < len(self.path) else 0
        self.widths.append(len(options))
        return options[i]

    def suggest_int(self, name: str, low: int, high: int) -> int:
        return self._pick(list(range(low, high + 1)))

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return self._pick(list(choices))


def points(cfg: StackConfig, name: str, prices: dict, knobs: tuple[str, ...] | None, limit: int) -> list[dict] | None:
    """Every distinct setting `suggest` can draw (the knobs' ranges depend on earlier draws: maxReplicas from
    minReplicas, scaleTarget from containerConcurrency, ...), in walk order; None when there are more than
    `limit` (the space is counted only as far as it could be tried)."""
    out: dict[tuple, dict] = {}
    path: list[int] = []
    while True:
        walk = _Walk(path)
        settings = suggest(walk, cfg, name, prices, knobs)
        out.setdefault(key(settings), settings)
        if len(out) > limit:
            return None
        path = path + [0] * (len(walk.widths) - len(path))
        while path and path[-1] + 1 >= walk.widths[len(path) - 1]:   # the odometer: next choice, deepest first
            path.pop()
        if not path:
            return list(out.values())
        path[-1] += 1


def key(settings: dict) -> tuple:
    """A setting as a hashable value: two trials with equal keys run the same configuration."""
    return tuple(sorted(settings.items()))

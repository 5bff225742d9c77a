"""Replica bounds and autoscaler settings as the policy rules read them off the resources: an InferenceService's
own fields and annotations, the HPA or KEDA ScaledObject that scales it in Standard mode, and the Knative
config-autoscaler its revisions run with.

Split out of `policy/resources.py` (the resource view and its small readers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from policy.resources import (HPA_TYPES, SCALED_OBJECT_TYPE, Context, Resource, _map, annotations, deployment_mode,
                              isvc_name, metadata, num, predictor)
from validation.annotations import CLASS_ANNOTATION, CONFIG_AUTOSCALER_ANNOTATION, KNATIVE_PREFIX, MAX_SCALE_KEYS


def hpas_for(res: Resource, ctx: Context) -> list[Resource]:
    """The HPAs and KEDA ScaledObjects scaling this InferenceService's predictor Deployment (`<name>-predictor`,
    same namespace)."""
    name, ns = isvc_name(res), metadata(res).get("namespace")
    out = []
    for hpa in ctx.of_type(*HPA_TYPES, SCALED_OBJECT_TYPE):
        ref = _map(_map(hpa.props.get("spec")).get("scaleTargetRef"))
        if ref.get("name") == f"{name}-predictor" and metadata(hpa).get("namespace") == ns:
            out.append(hpa)
    return out


@dataclass(frozen=True)
class ReplicaBounds:
    """An InferenceService's replica bounds as they act, and the field each is read from (for messages)."""

    min: Optional[float]
    max: Optional[float]
    min_field: str = "minReplicas"
    max_field: str = "maxReplicas"


def replica_bounds(res: Resource, ctx: Context) -> ReplicaBounds:
    """The predictor's `minReplicas`/`maxReplicas`; in Standard mode with autoscalerClass `external`, those of the
    HPA or ScaledObject that scales its Deployment (`hpas_for`), where the stack writes them: KServe reads neither
    predictor field then (deployment_reconciler.go applies minReplicas for class `none` only). Without such an
    autoscaler, the predictor's (isvc-scale-metric names the missing autoscaler), the maximum as `max_replicas`
    reads it."""
    if deployment_mode(res) == "Standard" and annotations(res).get(CLASS_ANNOTATION) == "external":
        for hpa in hpas_for(res, ctx):
            keys = ("minReplicaCount", "maxReplicaCount") if hpa.type == SCALED_OBJECT_TYPE else \
                ("minReplicas", "maxReplicas")
            return ReplicaBounds(*autoscaler_bounds(hpa), *(f"{hpa.label} {key}" for key in keys))
    return ReplicaBounds(num(predictor(res).get("minReplicas")), max_replicas(res))


def knative_autoscaler_data(ctx: Context, res: Optional[Resource] = None) -> Mapping:
    """The knative-serving/config-autoscaler keys every Knative revision without the matching annotation runs
    with: those the stack patches (`knative.autoscaler`; manifests/knative.py), else those it declares the cluster
    has (`knative.manageAutoscaler: false`), which ride on `res` as the JSON annotation
    `preflight.kserve.io/config-autoscaler` (manifests/inference_service.py). Empty: Knative's defaults."""
    for patch in ctx.of_type("kubernetes:core/v1:ConfigMapPatch"):
        meta = metadata(patch)
        if meta.get("name") == "config-autoscaler" and meta.get("namespace") == "knative-serving":
            return _map(patch.props.get("data"))
    if res is not None:
        try:
            declared = json.loads(str(annotations(res).get(CONFIG_AUTOSCALER_ANNOTATION, "{}")))
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in _map(declared).items()}
    return {}


# Knative's legacy camelCase key for max-scale (pkg/apis/autoscaling/register.go: MaxScaleAnnotation's
# KeyPriority), which hand-written InferenceServices use (guide 000 §8's template). KServe copies every
# InferenceService annotation to the revision except its disallowed list (components/predictor.go), which holds
# `max-scale` and `min-scale` but not the camelCase keys; SetAutoScalingAnnotations then writes max-scale from
# maxReplicas when that is set (it wins the KeyPriority) and min-scale from minReplicas always (default 1).
KNATIVE_MAX_SCALE, KNATIVE_MAX_SCALE_LEGACY = MAX_SCALE_KEYS
KNATIVE_TARGET = KNATIVE_PREFIX + "target"


def max_replicas(res: Resource) -> Optional[float]:
    """The most replicas a predictor may run: `maxReplicas`, else in Knative mode the legacy `maxScale`
    annotation that reaches the revision; None (0 or unset) is unbounded."""
    high = num(predictor(res).get("maxReplicas"))
    if not high and deployment_mode(res) == "Knative":
        high = num(annotations(res).get(KNATIVE_MAX_SCALE_LEGACY))
    return high or None


def concurrency_target(res: Resource) -> Optional[float]:
    """A Knative predictor's per-pod concurrency target: `scaleTarget` (KServe writes it as the target
    annotation), else the user's `autoscaling.knative.dev/target`, which KServe passes through; None when the
    metric is not concurrency."""
    pred, ann = predictor(res), annotations(res)
    if str(pred.get("scaleMetric") or ann.get(KNATIVE_PREFIX + "metric") or "concurrency") != "concurrency":
        return None
    target = num(pred.get("scaleTarget"))
    return num(ann.get(KNATIVE_TARGET)) if target is None else target


def knative_bounds(res: Resource) -> tuple[Optional[float], Optional[float]]:
    """A Knative-mode predictor's (min, max) replicas: minReplicas (KServe's default 1; min-scale annotations
    are overwritten by it), `max_replicas` (None: unbounded)."""
    low = num(predictor(res).get("minReplicas"))
    return (1.0 if low is None else low), max_replicas(res)


def autoscaler_bounds(hpa: Resource) -> tuple[Optional[float], Optional[float]]:
    """An HPA's (minReplicas, maxReplicas), unset min = 1 (autoscaling/v2); a ScaledObject's (minReplicaCount,
    maxReplicaCount), unset = KEDA's 0 and 100."""
    spec = _map(hpa.props.get("spec"))
    if hpa.type == SCALED_OBJECT_TYPE:
        low, high = num(spec.get("minReplicaCount")), num(spec.get("maxReplicaCount"))
        return (0.0 if low is None else low), (100.0 if high is None else high)
    low = num(spec.get("minReplicas"))
    return (1.0 if low is None else low), num(spec.get("maxReplicas"))


def autoscaler_behavior(hpa: Resource) -> Mapping:
    """An HPA's `spec.behavior`, or a ScaledObject's `spec.advanced.horizontalPodAutoscalerConfig.behavior`
    (which KEDA copies into the HPA it creates)."""
    spec = _map(hpa.props.get("spec"))
    if hpa.type == SCALED_OBJECT_TYPE:
        return _map(_map(_map(spec.get("advanced")).get("horizontalPodAutoscalerConfig")).get("behavior"))
    return _map(spec.get("behavior"))

"""What the cluster's admission webhooks would refuse, checked offline on the rendered objects.

Schema validation (validation/kubernetes.py) says a manifest is well-formed; the webhooks then apply rules that
depend on the cluster's configuration. This module applies the ones that bite a GPU InferenceService, each with
the upstream function it follows (knative/serving and kserve/kserve, checked 2026-08 `main`):

Knative Serving webhook — its pod-spec rules on a Knative-mode predictor: validation/knative_podspec.py.
Knative's revision defaulting (`pkg/apis/serving/v1/revision_defaults.go: defaultSecurityContext`, with
`secure-pod-defaults` Enabled) and then the kubelet (`verifyRunAsNonRoot`): validation/run_as_root.py.
KServe webhook — `pkg/apis/serving/v1beta1/inference_service_validation.go`:
- `validateInferenceServiceName` (IsvcNameFmt), `validateInferenceServiceAutoscaler` (AutoscalerAllowedClassList),
  `validateAutoScalingCompExtension` → `validateScalingHPACompExtension` (class hpa: cpu/memory only,
  AutoscalerAllowedHPAMetricsList; the target rule `metric == MetricCPU && target < 1 || target > 100` mirrors
  KServe's Go precedence, && before ||, even though it looks like a bug upstream: a cpu target below 1 and ANY
  metric's target above 100 are refused, memory's too, although memory's target is in MiB; then a memory target
  below 1), `validateScalingKedaCompExtension` (no scaleMetric; metric sources with a query and a value),
  `validateScalingKPACompExtension` (concurrency/rps; rps target ≥ 1; no deploymentStrategy), and on update
  `validateDeploymentMode` (validation/deployment_mode.py).
- `pkg/validation/env_policy.go` (KServe ≥ 0.18, `validateBlockedEnvVars`): no container sets `PYTHONPATH`.
- `pkg/controller/v1alpha1/utils/utils.go: ValidateInitialScaleAnnotation`: `initial-scale: 0` without the
  autoscaler's `allow-zero-initial-scale` is dropped silently — reported here because the intent is lost.
KServe controller — `components/predictor.go: reconcileModel`: a `spec.predictor.model` without `runtime` runs on
the highest-priority auto-selected runtime that serves its format at its protocol (`predictor_model.go:
GetSupportingRuntimes`; a missing `protocolVersion` is v1, `GetProtocol`, except format `triton`, which the
defaulting webhook sets to v2, `inference_service_defaults.go`); none → `NoSupportingRuntime`, never Ready.
Checked against KServe's default ClusterServingRuntimes (`config/runtimes/*.yaml`), not a cluster's own.
Knative's autoscaling annotations on the revision — `pkg/apis/autoscaling/annotation_validation.go:
validateMinMaxScale`: `activation-scale` must parse as an int32, be ≥ min-scale ("min-scale=%d is greater than
activation-scale=%d"), ≤ a non-zero max-scale ("max-scale=%d is less than activation-scale=%d") and > 1. KServe
writes min-scale from `minReplicas` (1 when unset) and max-scale from a non-zero `maxReplicas` over the service's
own annotations (`pkg/controller/v1alpha1/utils/utils.go: SetAutoScalingAnnotations`), so the bounds are
[max(2, minReplicas), maxReplicas] (`activation_scale_refusals`).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping

from validation.annotations import (ACTIVATION_SCALE, CLASS_ANNOTATION, INITIAL_SCALE, MAX_SCALE_KEYS,
                                    MODE_ANNOTATION)
from validation.cluster_admission import ClusterAdmission, Refusal, release
from validation.defaults import KSERVE_DEFAULT_MIN_REPLICAS
from validation.deployment_mode import STANDARD_MODES, deployment_mode_update_refusals, mode_name_refusals
from validation.knative_podspec import knative_pod_refusals, predictor_containers
from validation.run_as_root import run_as_root_refusals


# KServe v0.15.2 config/runtimes/*.yaml, the single-node ClusterServingRuntimes: name → (the model formats it
# auto-selects, the protocols it serves). Unchanged through v0.19 for the formats the stack renders.
DEFAULT_RUNTIMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kserve-huggingfaceserver": (("huggingface",), ("v2", "v1")),
    "kserve-tritonserver": (("tensorrt", "tensorflow", "onnx", "triton"), ("v2", "grpc-v2")),
    "kserve-tensorflow-serving": (("tensorflow",), ("v1", "grpc-v1")),
    "kserve-torchserve": (("pytorch",), ("v1", "v2", "grpc-v2")),
    "kserve-sklearnserver": (("sklearn",), ("v1", "v2")),
    "kserve-xgbserver": (("xgboost",), ("v1", "v2")),
    "kserve-lgbserver": (("lightgbm",), ("v1", "v2")),
    "kserve-mlserver": (("sklearn", "xgboost", "lightgbm", "mlflow"), ("v2",)),
    "kserve-paddleserver": (("paddle",), ("v1", "v2")),
    "kserve-pmmlserver": (("pmml",), ("v1", "v2")),
}
# kserve pkg/validation/env_policy.go DefaultBlockedEnvVars: name → the first KServe release refusing it (#5340).
KSERVE_BLOCKED_ENV: dict[str, tuple[int, int]] = {"PYTHONPATH": (0, 18)}


def kserve_blocked_env(version: tuple[int, int]) -> set[str]:
    return {name for name, since in KSERVE_BLOCKED_ENV.items() if version >= since}


ISVC_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")  # kserve IsvcNameFmt
AUTOSCALER_CLASSES = ("hpa", "external", "keda", "none")  # kserve constants.AutoscalerAllowedClassList
HPA_METRICS = ("cpu", "memory")  # constants.AutoscalerAllowedHPAMetricsList
KPA_METRICS = ("concurrency", "rps")  # constants.AutoscalerAllowedKPAMetricsList
_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def kserve_refusals(isvc: Mapping, cluster: ClusterAdmission, previous: Mapping | None = None) -> Iterator[Refusal]:
    """KServe's InferenceService webhook rules (module docstring) and its silent initial-scale drop."""
    meta = isvc.get("metadata") or {}
    name, ann = str(meta.get("name", "")), meta.get("annotations") or {}
    obj = f"InferenceService/{name}"
    pred = ((isvc.get("spec") or {}).get("predictor")) or {}
    rule = "inference_service_validation.go "
    if not ISVC_NAME.fullmatch(name):
        yield Refusal(obj, "metadata.name", rule + "validateInferenceServiceName",
                      f"expected a name matching {ISVC_NAME.pattern}")
    cls = ann.get(CLASS_ANNOTATION)
    if cls is not None and cls not in AUTOSCALER_CLASSES:
        yield Refusal(obj, f"metadata.annotations[{CLASS_ANNOTATION}]", rule + "validateInferenceServiceAutoscaler",
                      f"[{cls}] is not a supported autoscaler class type; expected one of {AUTOSCALER_CLASSES}")
    metric, target = pred.get("scaleMetric"), _number(pred.get("scaleTarget"))
    metrics = ((pred.get("autoScaling") or {}).get("metrics")) or []
    mode = ann.get(MODE_ANNOTATION, "Serverless")
    if mode in STANDARD_MODES and (cls or "hpa") == "hpa":  # the hpa reconciler is the Standard-mode default
        where = rule + "validateScalingHPACompExtension"
        hpa_metric = metric or "cpu"
        if hpa_metric not in HPA_METRICS:
            yield Refusal(obj, "spec.predictor.scaleMetric", where, f"[{metric}] is not a supported metric: "
                          "autoscaler class hpa scales on cpu or memory only (use class keda or external)")
        elif target is not None and (hpa_metric == "cpu" and target < 1 or target > 100):
            # KServe's `metric == MetricCPU && target < 1 || target > 100`, with Go's precedence (&& before ||)
            # kept: a target over 100 is refused for memory too, though memory's is in MiB (upstream's rule as
            # written, perhaps a bug there; the webhook applies it, so this does)
            yield Refusal(obj, "spec.predictor.scaleTarget", where, "the target utilization percentage should be "
                          "a [1-100] integer")
        elif hpa_metric == "memory" and target is not None and target < 1:
            yield Refusal(obj, "spec.predictor.scaleTarget", where, "the target memory should be greater than 1 MiB")
        for i, m in enumerate(metrics):
            if (m or {}).get("type") != "Resource":
                yield Refusal(obj, f"spec.predictor.autoScaling.metrics[{i}].type", where,
                              "valid metric source types are Resource")
    elif mode in STANDARD_MODES and cls == "keda":
        where = rule + "validateScalingKedaCompExtension"
        if metric is not None:
            yield Refusal(obj, "spec.predictor.scaleMetric", where, "ScaleMetric is not supported for KEDA")
        for i, m in enumerate(metrics):
            yield from _keda_metric_refusals(obj, f"spec.predictor.autoScaling.metrics[{i}]", m or {}, where)
    elif mode not in STANDARD_MODES:
        where = rule + "validateScalingKPACompExtension"
        if "deploymentStrategy" in pred:
            yield Refusal(obj, "spec.predictor.deploymentStrategy", where,
                          "customizing deploymentStrategy is only supported for raw deployment mode")
        if (metric or "concurrency") not in KPA_METRICS:
            yield Refusal(obj, "spec.predictor.scaleMetric", where, f"[{metric}] is not a supported metric "
                          f"in Knative mode; expected one of {KPA_METRICS}")
        elif metric == "rps" and target is not None and target < 1:
            yield Refusal(obj, "spec.predictor.scaleTarget", where, "the target for rps should be greater than 1")
        if _number(ann.get(INITIAL_SCALE)) == 0 and not cluster.allow_zero_initial_scale:
            yield Refusal(obj, f"metadata.annotations[{INITIAL_SCALE}]",
                          "controller/v1alpha1/utils/utils.go ValidateInitialScaleAnnotation",
                          "initial-scale 0 needs allow-zero-initial-scale: true in knative-serving/"
                          "config-autoscaler; without it KServe drops the annotation and the revision starts at "
                          "min-scale")
    blocked = kserve_blocked_env(cluster.kserve_version)
    for path, c in predictor_containers(pred):
        for i, env in enumerate(c.get("env") or []):
            name = (env or {}).get("name")
            if name in blocked:
                since = release(KSERVE_BLOCKED_ENV[name])
                yield Refusal(obj, f"{path}.env[{i}].name", rule + "validateBlockedEnvVars",
                              f"setting {name} is not allowed for security reasons (KServe {since} and later)")
    if isinstance(pred.get("model"), Mapping) and not pred["model"].get("runtime"):
        yield from _runtime_refusals(obj, pred["model"])
    yield from mode_name_refusals(obj, ann, cluster)
    if previous is not None:
        yield from deployment_mode_update_refusals(obj, ann, previous, cluster)


def _runtime_refusals(obj: str, model: Mapping) -> Iterator[Refusal]:
    """No default runtime serves the model's format at its protocol (module docstring: reconcileModel)."""
    fmt = str((model.get("modelFormat") or {}).get("name", ""))
    given = model.get("protocolVersion")
    protocol = given or ("v2" if fmt == "triton" else "v1")
    serving = {name: protocols for name, (formats, protocols) in DEFAULT_RUNTIMES.items() if fmt in formats}
    if not fmt or any(protocol in protocols for protocols in serving.values()):
        return
    where = "controller/v1beta1/inferenceservice/components/predictor.go reconcileModel"
    if not serving:
        known = sorted({f for formats, _ in DEFAULT_RUNTIMES.values() for f in formats})
        yield Refusal(obj, "spec.predictor.model.modelFormat.name", where, f"no runtime found to support predictor "
                      f"with model type {fmt}: KServe's runtimes auto-select {', '.join(known)}")
        return
    unset = "" if given else " (unset: KServe reads it as v1, predictor_model.go GetProtocol)"
    offers = "; ".join(f"{name} serves {', '.join(protocols)}" for name, protocols in serving.items())
    yield Refusal(obj, "spec.predictor.model.protocolVersion", where, f"no runtime found to support predictor with "
                  f"model type {fmt} at protocol {protocol}{unset}, so the InferenceService is never Ready "
                  f"(NoSupportingRuntime); {offers}: set protocolVersion to one of those")


def _keda_metric_refusals(obj: str, path: str, m: Mapping, where: str) -> Iterator[Refusal]:
    kind = m.get("type")
    key = {"Resource": "resource", "External": "external", "PodMetric": "podmetric"}.get(kind)
    if key is None:
        yield Refusal(obj, f"{path}.type", where, f"unknown KEDA metric type [{kind}]; valid types are Resource, "
                      "External, PodMetric")
        return
    source = m.get(key)
    if not isinstance(source, Mapping):
        yield Refusal(obj, f"{path}.{key}", where, f"metricSpec.{key} is not set for {kind} metric source type")
        return
    if kind in ("External", "PodMetric"):
        if not (source.get("metric") or {}).get("query"):
            yield Refusal(obj, f"{path}.{key}.metric.query", where, "the query should not be empty")
        if (source.get("target") or {}).get("value") in (None, ""):
            yield Refusal(obj, f"{path}.{key}.target.value", where, "the target threshold value should not be empty")


def admission_refusals(manifests: Iterable[Mapping], cluster: ClusterAdmission | None = None,
                       previous: Mapping[str, Mapping] | None = None) -> list[Refusal]:
    """Every refusal for a stack's rendered objects; `previous` maps InferenceService names to the deployed ones."""
    cluster = cluster or ClusterAdmission()
    out: list[Refusal] = []
    for m in manifests:
        if m.get("kind") != "InferenceService":
            continue
        name = str((m.get("metadata") or {}).get("name", ""))
        ann = (m.get("metadata") or {}).get("annotations") or {}
        pred = ((m.get("spec") or {}).get("predictor")) or {}
        knative_mode = ann.get(MODE_ANNOTATION, "Serverless") not in STANDARD_MODES
        out += kserve_refusals(m, cluster, (previous or {}).get(name))
        if knative_mode:
            out += knative_pod_refusals(f"InferenceService/{name}", pred, cluster)
            out += activation_scale_refusals(f"InferenceService/{name}", ann, pred)
        out += run_as_root_refusals(f"InferenceService/{name}", pred, cluster, knative_mode)
    return out


def _go_int32(value: Any) -> int | None:
    """`strconv.ParseInt(value, 10, 32)`: None where Go returns an error."""
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        return None
    n = int(value)
    return n if -2**31 <= n < 2**31 else None


def _scale_annotation(ann: Mapping, keys: tuple[str, ...]) -> int:
    """getIntGE0 on the first key present (0 when absent or unparsable: that error is Knative's own, elsewhere)."""
    for key in keys:
        if key in ann:
            n = _go_int32(ann[key])
            return n if n is not None and n >= 0 else 0
    return 0


def revision_scale_bounds(ann: Mapping, pred: Mapping) -> tuple[int, int]:
    """(min-scale, max-scale) on the Knative revision as KServe writes them (SetAutoScalingAnnotations: minReplicas,
    default 1; a non-zero maxReplicas, else the service's own max-scale annotation, else none = 0)."""
    min_replicas, max_replicas = _number(pred.get("minReplicas")), _number(pred.get("maxReplicas"))
    min_scale = KSERVE_DEFAULT_MIN_REPLICAS if min_replicas is None else int(min_replicas)
    return min_scale, int(max_replicas or 0) or _scale_annotation(ann, MAX_SCALE_KEYS)


def activation_scale_refusals(obj: str, ann: Mapping, pred: Mapping) -> Iterator[Refusal]:
    """annotation_validation.go validateMinMaxScale's activation-scale branch (module docstring), in its order."""
    if ACTIVATION_SCALE not in ann:
        return
    value = ann[ACTIVATION_SCALE]
    path, rule = f"metadata.annotations[{ACTIVATION_SCALE}]", "annotation_validation.go validateMinMaxScale"
    min_scale, max_scale = revision_scale_bounds(ann, pred)
    n = _go_int32(value)
    bounds = (f"; expected an integer from {max(2, min_scale)} to {max_scale}" if max_scale else
              f"; expected an integer >= {max(2, min_scale)}") + " (min-scale is minReplicas, max-scale maxReplicas)"
    if n is None:
        yield Refusal(obj, path, rule, f"invalid value: {value!r}" + bounds)
    elif min_scale > n:
        yield Refusal(obj, path, rule, f"min-scale={min_scale} is greater than activation-scale={n}" + bounds)
    elif max_scale and max_scale < n:
        yield Refusal(obj, path, rule, f"max-scale={max_scale} is less than activation-scale={n}" + bounds)
    elif n < 2:
        yield Refusal(obj, path, rule, f"activation-scale={n} must be greater than 1" + bounds)

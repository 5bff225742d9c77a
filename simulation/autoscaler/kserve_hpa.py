"""The metric of the HorizontalPodAutoscaler KServe builds for a Standard-mode predictor (autoscaler class `hpa`,
the default), and what KServe's webhook refuses first.

KServe 0.15+ `pkg/controller/v1beta1/inferenceservice/reconcilers/hpa/hpa_reconciler.go: getHPAMetrics`:
- with `autoScaling` (v1beta1 AutoScalingSpec): one Resource metric per `metrics` entry naming cpu
  (`averageUtilization`, default 80) or memory; any other entry is skipped, `scaleMetric` is not read;
- else `scaleMetric` cpu (the default) at `scaleTarget` % or 80, memory only with a `scaleTarget`, and no metric
  at all for concurrency or rps.
An HPA without metrics gets CPU 80 % from the API server (kubernetes `pkg/apis/autoscaling/v2/defaults.go:
SetDefaults_HorizontalPodAutoscaler`), so a class-less `scaleMetric: concurrency` scales on CPU.
The webhook (`pkg/apis/serving/v1beta1/inference_service_validation.go: validateAutoScalingCompExtension`) checks
only an explicit `serving.kserve.io/autoscalerClass: hpa` (0.15: mode RawDeployment; 0.16+ normalizes it to
Standard first): `validateScalingHPACompExtension` takes scaleMetric cpu or memory (`validateHPAMetrics`,
`AutoscalerAllowedHPAMetricsList`), refuses a cpu scaleTarget below 1 and any above 100, and Resource entries
only in `autoScaling.metrics`.
Simplification: a memory metric is refused as not simulated (a model server's memory does not follow its load).
"""

from __future__ import annotations

from typing import Any

from validation.annotations import CLASS_ANNOTATION
from validation.errors import Problem

HPA_METRICS = ("cpu", "memory")   # kserve constants.AutoscalerAllowedHPAMetricsList
DEFAULT_CPU_UTILIZATION = 80.0    # kserve constants.DefaultCPUUtilization = the API server's default
_WEBHOOK = "KServe's webhook refuses it (inference_service_validation.go validateScalingHPACompExtension)"
_NOT_SIMULATED = ("a memory HPA is not simulated (a model server's memory does not follow its load): use cpu, or "
                  f"{CLASS_ANNOTATION}: external with a HorizontalPodAutoscaler or KEDA ScaledObject under `hpa:`")


def kserve_hpa_target(pred: dict, path: str, explicit: bool, problems: list[Problem]) -> float:
    """The CPU utilisation target (%) of the HPA KServe builds for predictor `pred` (at `path`); `explicit`: the
    class annotation says `hpa`, so the webhook checks first. Each refusal or unsimulated metric is a Problem."""
    metric, target = pred.get("scaleMetric"), pred.get("scaleTarget")
    auto = pred.get("autoScaling")
    entries = auto.get("metrics") if isinstance(auto, dict) else None
    entries = entries if isinstance(entries, list) else []
    if explicit:
        if (metric or "cpu") not in HPA_METRICS:
            problems.append(Problem(f"{path}.scaleMetric", metric, f"expected 'cpu' or 'memory' with {CLASS_ANNOTATION}"
                                    f": hpa; {_WEBHOOK} ('{metric}' is not a supported metric). To scale on "
                                    f"in-flight requests use {CLASS_ANNOTATION}: external with a "
                                    "HorizontalPodAutoscaler "
                                    "or KEDA ScaledObject under `hpa:`, or deploymentMode Knative"))
        elif _number(target) is not None and ((metric or "cpu") == "cpu" and target < 1 or target > 100):
            problems.append(Problem(f"{path}.scaleTarget", target, f"expected a utilization percentage from 1 to 100; "
                                    f"{_WEBHOOK}"))
        for i, entry in enumerate(entries):
            kind = entry.get("type") if isinstance(entry, dict) else None
            if kind != "Resource" or not isinstance(entry.get("resource"), dict):
                problems.append(Problem(f"{path}.autoScaling.metrics[{i}]", entry, "expected a Resource metric "
                                        f"(type: Resource with resource:) with {CLASS_ANNOTATION}: hpa; {_WEBHOOK}"))
    if isinstance(auto, dict):
        cpu: list[float] = []
        for i, entry in enumerate(entries):
            resource = entry.get("resource") if isinstance(entry, dict) else None
            name = resource.get("name") if isinstance(resource, dict) else None
            if name == "memory":
                problems.append(Problem(f"{path}.autoScaling.metrics[{i}].resource.name", name, _NOT_SIMULATED))
            elif name == "cpu":
                value = (resource.get("target") or {}).get("averageUtilization") \
                    if isinstance(resource.get("target"), dict) else None
                if value is None:
                    cpu.append(DEFAULT_CPU_UTILIZATION)
                elif (_number(value) or 0) > 0:
                    cpu.append(float(value))
                else:
                    problems.append(Problem(f"{path}.autoScaling.metrics[{i}].resource.target.averageUtilization",
                                            value, "expected a percentage > 0 (the API server refuses the HPA)"))
        # The HPA follows the metric asking for most replicas: of several CPU targets, the lowest.
        return min(cpu) if cpu else DEFAULT_CPU_UTILIZATION
    if metric == "memory" and target is not None:
        problems.append(Problem(f"{path}.scaleMetric", metric, _NOT_SIMULATED))
    if metric in (None, "cpu") and _number(target) is not None:
        return float(target)
    return DEFAULT_CPU_UTILIZATION   # cpu without a target, or no metric built: the API server's default


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

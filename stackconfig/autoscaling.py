"""Autoscaling settings a service may tune: Knative's annotations (KPA) and `hpa.behavior` (Standard mode)."""

from __future__ import annotations

from validation.fields import Section
from validation.kubernetes import parse_duration, validation_errors

# Knative annotations a service may set (pkg/apis/autoscaling/register.go). min/max-scale, target, metric and
# class come from KServe's own fields, so setting them here would put one knob in two places.
KNATIVE_ANNOTATIONS = {
    "autoscaling.knative.dev/scale-down-delay": "duration",
    "autoscaling.knative.dev/window": "duration",
    "autoscaling.knative.dev/target-burst-capacity": "number",
    "autoscaling.knative.dev/initial-scale": "number",
    "autoscaling.knative.dev/activation-scale": "number",
    "autoscaling.knative.dev/panic-window-percentage": "number",
    "autoscaling.knative.dev/panic-threshold-percentage": "number",
    "autoscaling.knative.dev/target-utilization-percentage": "number",
    "autoscaling.knative.dev/scale-to-zero-pod-retention-period": "duration",
    "autoscaling.knative.dev/metric-aggregation-algorithm": "word",
}


def parse_annotations(sec: Section) -> dict[str, str]:
    annotations = sec.str_map("annotations", {})
    for key, value in annotations.items():
        kind = KNATIVE_ANNOTATIONS.get(key)
        if kind is None:
            sec.problem(f"annotations.{key}", value, "expected one of the Knative autoscaling annotations "
                        + ", ".join(sorted(KNATIVE_ANNOTATIONS)) + " (min/max scale, target and metric are "
                        "the service's minReplicas/maxReplicas/scaleTarget/scaleMetric)")
        elif kind == "duration" and parse_duration(value) is None:
            sec.problem(f"annotations.{key}", value, 'expected a duration such as "90s", "5m" or "1h"')
        elif kind == "number":
            try:
                float(value)
            except ValueError:
                sec.problem(f"annotations.{key}", value, 'expected a number as a string, e.g. "211"')
    window = parse_duration(annotations.get("autoscaling.knative.dev/window"))
    if window is not None and not 6 <= window <= 3600:
        sec.problem("annotations.autoscaling.knative.dev/window", annotations["autoscaling.knative.dev/window"],
                    "expected between 6s and 1h (knative pkg/apis/autoscaling/register.go)")
    return annotations


def check_hpa_behavior(hpa: Section, behavior: dict, kubernetes_version: str) -> None:
    """Schema-check `hpa.behavior` now: it goes into the HPA verbatim, and the API server would reject it only
    after `pulumi up` had created the node group and everything before the HPA."""
    probe = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 1,
                      "behavior": behavior}}
    for error in validation_errors(probe, kubernetes_version):
        hpa.problem("behavior", behavior, "expected an autoscaling/v2 HorizontalPodAutoscalerBehavior: "
                    + error.split(": ", 1)[1].replace("spec.behavior", "behavior"))


def traffic_shape(workload: dict | None) -> str:
    """"spiky" or "steady" from the simulation workload mapping; a trace or no workload counts as spiky.

    Gamma inter-arrivals with CV > 1, steps and spikes are bursty by construction; real traces (the Azure code
    trace has CV 13) are assumed bursty; Poisson, CV ≤ 1 gamma and slow diurnal curves are steady.
    """
    if not isinstance(workload, dict):
        return "spiky"
    kind = workload.get("kind")
    if kind in ("poisson", "diurnal"):
        return "steady"
    if kind == "gamma":
        cv = workload.get("cv", 1.0)
        return "steady" if isinstance(cv, (int, float)) and cv <= 1.0 else "spiky"
    return "spiky"

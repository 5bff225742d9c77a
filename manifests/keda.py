"""The KEDA ScaledObject (keda.sh/v1alpha1) that scales a Standard-mode service on the runtime's own in-flight
requests, read from Prometheus.

Why our own ScaledObject and not KServe's `autoscalerClass: keda`: KServe's KEDA reconciler
(`reconcilers/keda/keda_reconciler.go`, 0.15+) builds the ScaledObject from `spec.predictor.autoScaling` and
sets no `advanced.horizontalPodAutoscalerConfig.behavior`, so the scale-down stabilisation the stack tunes (and
the simulation models) would be lost, and `autoScaling` is not in the InferenceService schema subset we validate.
With `autoscalerClass: external` KServe creates no autoscaler and this object scales `<name>-predictor`; KEDA names
its own HPA `keda-hpa-<ScaledObject name>`, which cannot clash with KServe's `<name>-predictor`.

The query is the pods' total of requests the runtime holds (running + queued); `metricType: AverageValue` makes
KEDA's HPA divide it by the ready pods, so `threshold` is the per-pod concurrency target (`scaleTarget`), the
quantity the simulation's HPA scales on. Metric names, as each runtime exports them on `/metrics`:
- vLLM (`vllm/v1/metrics/loggers.py`, PrometheusStatLogger): gauges `vllm:num_requests_running` and
  `vllm:num_requests_waiting`;
- TGI (docs `reference/metrics`, router `src/infer/queue.rs`, `src/infer/v3/scheduler.rs`): gauges
  `tgi_queue_size` (queued) and `tgi_batch_current_size` (in the running batch);
- Triton (docs `user_guide/metrics.md`): no in-flight gauge; `nv_inference_request_duration_us` is the
  cumulative request time (queue + compute), so its rate in seconds per second is the mean number in flight
  (Little's law), lagging by the rate window: 1 m, or two scrape intervals when longer (`rate` needs two
  samples in its window, `promql/functions.go: extrapolatedRate`; with 1 m scrapes a 1 m window is empty);
- the plain Transformers backend (KServe huggingfaceserver without vLLM) exports no request gauge: refused.
Series are selected by `namespace` and `pod`, the labels a PodMonitor or the usual kubernetes-pods scrape
config attaches. The scrape interval the stack assumes (`hpa.scrapeInterval`) rides on the ScaledObject as the
annotation the simulation reads (`simulation/autoscaler/keda.py`): the HPA sees the gauges as last scraped.
"""

from __future__ import annotations

import math

from manifests.common import labels
from simulation.autoscaler.keda import SCRAPE_ANNOTATION
from simulation.autoscaler.promql import IN_FLIGHT_GAUGES, TRITON_RATE_METRIC
from stackconfig.schema import ServiceConfig


def in_flight_query(svc: ServiceConfig) -> str:
    """PromQL for the requests the service's pods hold (running + queued), summed over its pods."""
    sel = f'{{namespace="{svc.namespace}",pod=~"{svc.name}-predictor-.*"}}'
    if svc.engine in IN_FLIGHT_GAUGES:
        return " + ".join(f"sum({metric}{sel})" for metric in IN_FLIGHT_GAUGES[svc.engine])
    if svc.engine == "triton":
        window = max(60, math.ceil(2 * svc.prometheus_scrape_interval_s))
        return f"sum(rate({TRITON_RATE_METRIC}{sel}[{_duration(window)}])) / 1e6"
    raise ValueError(f"engine {svc.engine!r} exports no in-flight metric (config validation refuses it)")


def _duration(seconds: float) -> str:
    """A Prometheus duration: whole minutes as "1m", else seconds ("90s", "0.5s" as "500ms")."""
    if seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s" if float(seconds).is_integer() else f"{round(seconds * 1000)}ms"


def scaled_object_name(svc: ServiceConfig) -> str:
    """Not `<name>-predictor`, the name KServe's own KEDA reconciler would give its ScaledObject."""
    return f"{svc.name}-predictor-scaler"


def scaled_object(svc: ServiceConfig) -> dict:
    """ScaledObject on KServe's raw Deployment `<name>-predictor` (Standard mode, scaleMetric concurrency)."""
    spec: dict = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{svc.name}-predictor"},
        "minReplicaCount": max(1, svc.min_replicas),
        "maxReplicaCount": svc.max_replicas,
        "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
            "serverAddress": svc.prometheus_address,
            "query": in_flight_query(svc),
            "threshold": str(svc.scale_target or 1),
        }}],
    }
    if svc.hpa_behavior:
        spec["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": svc.hpa_behavior}}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": scaled_object_name(svc), "namespace": svc.namespace,
                     "labels": labels(svc.name, "autoscaler"),
                     "annotations": {SCRAPE_ANNOTATION: _duration(svc.prometheus_scrape_interval_s)}},
        "spec": spec,
    }

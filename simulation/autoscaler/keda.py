"""Read a KEDA ScaledObject (keda.sh/v1alpha1) into the HPA KEDA creates and the Prometheus metric it scales on.

KEDA creates the HPA `keda-hpa-<name>` with one External metric per trigger; with `metricType: AverageValue`
its target is the trigger's `threshold` per pod (`pkg/scalers/prometheus_scaler.go: GetMetricSpecForScaling`)
and `advanced.horizontalPodAutoscalerConfig.behavior` is its behavior. When the HPA controller asks for the
metric (every sync period), KEDA's metrics adapter runs the trigger's query against Prometheus at that instant
(`ExecutePromQuery`, `time=now`; `pkg/scaling/scale_handler.go: GetScaledObjectMetrics`), unless the trigger
sets `useCachedMetrics`, then it serves the value of its own last poll (every `pollingInterval`, default 30 s,
`apis/keda/v1alpha1/withtriggers_types.go`; the loop polls at once, then each interval: `startScaleLoop`). An
empty result reads as 0 (`ignoreNullValues`, default true). `pollingInterval` otherwise drives only KEDA's own
activation 0 ↔ 1, which the simulation does not need: `minReplicaCount` 0 is not simulated (the HPA's minimum
is at least 1).

Prometheus scrapes the pods every scrape interval; that interval is the cluster's Prometheus setting, not a
ScaledObject field, so the stack writes the one it assumes (`hpa.scrapeInterval`) as the annotation
`SCRAPE_ANNOTATION` on the ScaledObject it deploys and the simulation reads it from there. Absent: 30 s,
prometheus-operator's default `spec.scrapeInterval` (kube-prometheus-stack's Prometheus).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from simulation.autoscaler.hpa import MAX_REPLICAS, HpaSpec, behavior_rules
from simulation.autoscaler.promql import query_kind
from validation.errors import Problem
from validation.fields import Section
from validation.kubernetes import parse_duration

SCRAPE_ANNOTATION = "preflight.kserve.io/prometheus-scrape-interval"
DEFAULT_SCRAPE_INTERVAL_S = 30.0     # prometheus-operator Prometheus CR spec.scrapeInterval default
DEFAULT_POLLING_INTERVAL_S = 30      # keda withtriggers_types.go defaultPollingInterval
DEFAULT_MAX_REPLICAS = 100           # keda: maxReplicaCount default
# At least 1 s: Prometheus' own default is 1m (docs/configuration `scrape_interval`), prometheus-operator's 30 s,
# and sub-second scrapes are not a realistic cluster setting, while the simulation's cost grows with
# pods × duration / interval, which its request budget does not count. At most the 5 min lookback: else the series
# is stale between scrapes.
SCRAPE_RANGE_S = (1.0, 300.0)


@dataclass(frozen=True)
class PrometheusMetric:
    """The External metric KEDA's HPA reads: the trigger's query on Prometheus' scraped samples."""

    kind: str = "gauge"                          # gauge (point samples) | rate (rate(counter[window]))
    window_s: float = 0.0                        # the rate window
    scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S
    polling_interval_s: float = float(DEFAULT_POLLING_INTERVAL_S)
    cached: bool = False                         # useCachedMetrics: the value of KEDA's last poll


def scrape_interval(value: Any, path: str, problems: list[Problem]) -> float:
    """A scrape interval as a duration string ("30s"); bad → a Problem and the default."""
    seconds = parse_duration(value) if isinstance(value, str) else None
    lo, hi = SCRAPE_RANGE_S
    if seconds is None or not lo <= seconds <= hi:
        problems.append(Problem(path, value, f"expected a duration like '30s' between {lo:g}s and {hi:g}s "
                                             "(longer than Prometheus' 5 min lookback leaves the series stale)"))
        return DEFAULT_SCRAPE_INTERVAL_S
    return seconds


def from_scaled_object(base: HpaSpec, top: Section, problems: list[Problem]) -> HpaSpec:
    """The HPA of a ScaledObject with one `prometheus` trigger, `metricType: AverageValue`, on the runtime's
    in-flight requests (manifests/keda.py), read as that metric per pod."""
    spec = top.section("spec")
    lo = spec.int("minReplicaCount", base.min_replicas, min=1, max=MAX_REPLICAS)
    hi = spec.int("maxReplicaCount", DEFAULT_MAX_REPLICAS, min=1, max=MAX_REPLICAS)
    polling = spec.int("pollingInterval", DEFAULT_POLLING_INTERVAL_S, min=1)
    annotations = top.section("metadata").raw("annotations") or {}
    interval = DEFAULT_SCRAPE_INTERVAL_S
    if isinstance(annotations, dict) and SCRAPE_ANNOTATION in annotations:
        interval = scrape_interval(annotations[SCRAPE_ANNOTATION],
                                   f"{top.path}.metadata.annotations[{SCRAPE_ANNOTATION}]", problems)
    triggers = spec.raw("triggers")
    trigger = triggers[0] if isinstance(triggers, list) and len(triggers) == 1 and isinstance(triggers[0], dict) \
        else None
    tp = f"{spec.path}.triggers[0]"
    target, metric = base.target, PrometheusMetric(scrape_interval_s=interval, polling_interval_s=float(polling))
    if trigger is None:
        problems.append(Problem(f"{spec.path}.triggers", triggers, "expected one prometheus trigger (on the "
                                                                   "runtime's in-flight requests)"))
    elif trigger.get("type") != "prometheus" or trigger.get("metricType", "AverageValue") != "AverageValue":
        problems.append(Problem(tp, {k: trigger.get(k) for k in ("type", "metricType")},
                                "simulated: type prometheus with metricType AverageValue (in-flight per pod)"))
    else:
        meta = trigger.get("metadata") if isinstance(trigger.get("metadata"), dict) else {}
        target = _threshold(meta.get("threshold"), f"{tp}.metadata.threshold", base.target, problems)
        metric = _metric(metric, trigger, meta, tp, problems)
    advanced = spec.raw("advanced")
    hpa_config = advanced.get("horizontalPodAutoscalerConfig") if isinstance(advanced, dict) else None
    behavior = hpa_config.get("behavior") if isinstance(hpa_config, dict) else None
    up, down = behavior_rules(behavior, f"{spec.path}.advanced.horizontalPodAutoscalerConfig.behavior", problems)
    return replace(base, min_replicas=lo, max_replicas=max(hi, lo), metric="concurrency", target=target,
                   scale_up=up, scale_down=down, keda=metric)


def _threshold(value: Any, path: str, default: float, problems: list[Problem]) -> float:
    try:
        target = float(value)
        if not target > 0 or math.isinf(target):
            raise ValueError
        return target
    except (TypeError, ValueError):
        problems.append(Problem(path, value, "expected a number > 0 (in-flight requests per pod)"))
        return default


def _metric(metric: PrometheusMetric, trigger: dict, meta: dict, tp: str,
            problems: list[Problem]) -> PrometheusMetric:
    """The query's shape (point samples of gauges, or a rate window) and `useCachedMetrics`."""
    cached = trigger.get("useCachedMetrics", False)
    if not isinstance(cached, bool):
        problems.append(Problem(f"{tp}.useCachedMetrics", cached, "expected true or false"))
        cached = False
    query = meta.get("query")
    kind = query_kind(query) if isinstance(query, str) and query.strip() else "expected a PromQL query"
    if isinstance(kind, str):
        problems.append(Problem(f"{tp}.metadata.query", query, kind))
        return replace(metric, cached=cached)
    return replace(metric, kind=kind[0], window_s=kind[1], cached=cached)

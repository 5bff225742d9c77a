"""KPA configuration: the cluster's `config-autoscaler` overlaid with a revision's `autoscaling.knative.dev/*`
annotations.

The cluster-wide values come from simulation/autoscaler/cluster_config.py (Knative's defaults unless the stack or
scenario says otherwise); annotation names and ranges follow `pkg/apis/autoscaling/register.go` and
`annotation_validation.go`; which setting an annotation overrides follows
`pkg/reconciler/autoscaling/kpa/resources/decider.go: MakeDecider`; the target resolution follows
`pkg/reconciler/autoscaling/resources/target.go: ResolveMetricTarget`; the panic window follows
`pkg/reconciler/autoscaling/resources/metric.go: MakeMetric`. The revision's `serving.knative.dev/progress-deadline`
(copied onto the PodAutoscaler, `pkg/reconciler/revision/resources/pa.go: MakePA`) sets how long an activation may
take before the KPA gives up (`kpa/scaler.go: handleScaleToZero`, `PodAutoscaler.ProgressDeadline`); without it,
config-deployment's `progress-deadline` (600 s, `pkg/deployment/config.go`), which the simulation does not vary.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from simulation.autoscaler.cluster_config import (CONFIG_AUTOSCALER, DEFAULT as CLUSTER_DEFAULT, HPA_CLASS,
                                                   KPA_CLASS, ClusterAutoscaler)
from validation.annotations import KNATIVE_PREFIX as PREFIX, PROGRESS_DEADLINE_KEY
from validation.errors import Problem
from validation.kubernetes import parse_duration

DEFAULT_PROGRESS_DEADLINE_S = 600.0   # pkg/deployment/config.go ProgressDeadlineDefault (config-deployment)
ACTIVATION_TIMEOUT_BUFFER_S = 30.0    # kpa/scaler.go activationTimeoutBuffer
PROGRESS_DEADLINE_MAX_S = float(2**31 - 1)   # the Deployment's progressDeadlineSeconds is an int32
RPS_TARGET_UTILIZATION = 0.70   # config.go defaultConfig TargetUtilization: the rps metric's, no ConfigMap key
# config-autoscaler keys Knative reads only cluster-wide: no annotation sets them (register.go has none; the
# decider takes them from the ConfigMap, decider.go MakeDecider).
CLUSTER_ONLY = ("max-scale-up-rate", "max-scale-down-rate")


@dataclass(frozen=True)
class AutoscalerConfig:
    """Knative KPA settings for one revision (defaults = `defaultConfig()`)."""

    # The cluster-wide settings default to config-autoscaler's defaults (`ClusterAutoscaler`, stated once there).
    autoscaler_class: str = CLUSTER_DEFAULT.pod_autoscaler_class
    metric: str = "concurrency"                 # concurrency | rps
    container_concurrency: int = 0              # revision CC (0 = unlimited)
    target: float | None = None                 # annotation `target` (None = default)
    target_utilization: float = CLUSTER_DEFAULT.container_concurrency_target_fraction
    container_concurrency_target_default: float = CLUSTER_DEFAULT.container_concurrency_target_default
    rps_target_default: float = CLUSTER_DEFAULT.rps_target_default
    target_burst_capacity: float = CLUSTER_DEFAULT.target_burst_capacity
    stable_window_s: float = CLUSTER_DEFAULT.stable_window_s
    panic_window_percentage: float = CLUSTER_DEFAULT.panic_window_percentage
    panic_threshold_percentage: float = CLUSTER_DEFAULT.panic_threshold_percentage
    max_scale_up_rate: float = CLUSTER_DEFAULT.max_scale_up_rate
    max_scale_down_rate: float = CLUSTER_DEFAULT.max_scale_down_rate
    scale_to_zero_grace_period_s: float = CLUSTER_DEFAULT.scale_to_zero_grace_period_s
    scale_to_zero_pod_retention_s: float = CLUSTER_DEFAULT.scale_to_zero_pod_retention_s
    scale_down_delay_s: float = CLUSTER_DEFAULT.scale_down_delay_s
    initial_scale: int = CLUSTER_DEFAULT.initial_scale
    allow_zero_initial_scale: bool = CLUSTER_DEFAULT.allow_zero_initial_scale
    min_scale: int = CLUSTER_DEFAULT.min_scale
    max_scale: int = CLUSTER_DEFAULT.max_scale  # 0 = unlimited
    activation_scale: int = 1
    enable_scale_to_zero: bool = CLUSTER_DEFAULT.enable_scale_to_zero
    tick_interval_s: float = 2.0                # multiscaler.go tickInterval
    progress_deadline_s: float = DEFAULT_PROGRESS_DEADLINE_S   # serving.knative.dev/progress-deadline
    bucket_s: float = 1.0                       # fixed: not a Knative setting (no annotation sets it)
    # annotation `metric-aggregation-algorithm` (no config-autoscaler key): "linear" or "weighted-exponential",
    # the window averages' (`aggregation.make_window`)
    aggregation: str = "linear"

    def __post_init__(self) -> None:
        # The KPA loop adds scrape k (at t = k s) to bucket k (`WindowBuckets.add`) and its lazy scrapes run on
        # whole seconds (`KpaLoop.catch_scrapes`): both hold only for 1 s buckets, Knative's granularity.
        if self.bucket_s != 1.0:
            raise ValueError(f"AutoscalerConfig.bucket_s = {self.bucket_s!r}: only 1.0 s buckets are supported "
                             "(the KPA loop's scrapes index buckets by whole second)")

    # -- derived (resources/target.go, kpa/resources/metric.go) ---------------------------------------
    @property
    def total_value(self) -> float:
        if self.metric == "rps":
            total = self.rps_target_default
        else:
            total = float(self.container_concurrency) if self.container_concurrency > 0 else \
                self.container_concurrency_target_default
        if self.target is not None:
            total = self.target
            if self.metric == "concurrency" and self.container_concurrency > 0:
                total = min(self.target, float(self.container_concurrency))
        return total

    @property
    def target_value(self) -> float:
        return max(0.01, self.total_value * self.target_utilization)

    @property
    def panic_window_s(self) -> float:
        """MakeMetric: `time.Duration(float64(stable) * pct / 100.0).Round(time.Second)`, at least the 1 s bucket.
        The float nanoseconds truncate to an integer Duration, and `Duration.Round` rounds halves away from zero
        (a 25 s window at 10 % is 3 s, not Python's round-half-even 2 s)."""
        ns = int(float(round(self.stable_window_s * 1e9)) * self.panic_window_percentage / 100.0)
        whole, rest = divmod(ns, 1_000_000_000)
        return max(1.0, float(whole + (rest + rest >= 1_000_000_000)))

    @property
    def activation_timeout_s(self) -> float:
        """handleScaleToZero: an activation not Ready within the progress deadline + 30 s scales back to 0."""
        return self.progress_deadline_s + ACTIVATION_TIMEOUT_BUFFER_S

    @property
    def panic_threshold(self) -> float:
        return self.panic_threshold_percentage / 100.0


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _num(v: Any, integer: bool = False) -> float | None:
    """An annotation value as Knative parses it: `strconv.ParseInt(v, 10, 32)` for integers (so "2.0", "1e1"
    and " 3" are refused), `strconv.ParseFloat` for numbers (ASCII only — Python's float("１０") is 10, Go's is an
    error — with no spaces or underscores); None when refused."""
    if isinstance(v, bool):  # YAML `true` is no annotation value (Kubernetes annotations are strings)
        return None
    if isinstance(v, str) and (not _GO_INT.fullmatch(v) if integer else
                               (v != v.strip() or "_" in v or not v.isascii())):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int too big for a float
        return None
    return f if math.isfinite(f) else None


def from_cluster(cluster: ClusterAutoscaler, container_concurrency: int) -> AutoscalerConfig:
    """A revision without annotations: every setting from the cluster's config-autoscaler."""
    k = cluster
    return AutoscalerConfig(
        autoscaler_class=k.pod_autoscaler_class, container_concurrency=container_concurrency,
        target_utilization=k.container_concurrency_target_fraction,
        container_concurrency_target_default=k.container_concurrency_target_default,
        rps_target_default=k.rps_target_default, target_burst_capacity=k.target_burst_capacity,
        stable_window_s=k.stable_window_s, panic_window_percentage=k.panic_window_percentage,
        panic_threshold_percentage=k.panic_threshold_percentage, max_scale_up_rate=k.max_scale_up_rate,
        max_scale_down_rate=k.max_scale_down_rate, scale_to_zero_grace_period_s=k.scale_to_zero_grace_period_s,
        scale_to_zero_pod_retention_s=k.scale_to_zero_pod_retention_s, scale_down_delay_s=k.scale_down_delay_s,
        initial_scale=k.initial_scale, allow_zero_initial_scale=k.allow_zero_initial_scale, min_scale=k.min_scale,
        max_scale=k.max_scale, enable_scale_to_zero=k.enable_scale_to_zero)


def from_annotations(annotations: dict[str, Any], container_concurrency: int, problems: list[Problem],
                     path: str = "metadata.annotations", *, min_scale: int | None = None,
                     max_scale: int | None = None, target: float | None = None, metric: str | None = None,
                     autoscaler_class: str | None = None, check_bounds: bool = True,
                     cluster: ClusterAutoscaler = CLUSTER_DEFAULT,
                     cluster_where: str = "the stack's knative.autoscaler or a scenario's config_autoscaler",
                     refuse_zero_initial_scale: bool = True) -> AutoscalerConfig:
    """Overlay annotations on the cluster's settings, and KServe's translated fields, passed as keywords, over both
    (the class keyword only where no class annotation is set), as KServe writes them onto the revision.

    Annotation values are strings in Kubernetes (`"60s"`, `"3"`); numbers are accepted too. Every bad value
    becomes a Problem naming the annotation. Knative itself ignores an `autoscaling.knative.dev/*` key it does
    not know: `ValidateAnnotations` (annotation_validation.go) checks only its own keys and the reconcilers read
    only those, so a typo or a cluster-wide key set as an annotation is admitted and silently has no effect.
    This reader refuses both, so the simulation never honours what the cluster would ignore; the cluster-only
    keys (`CLUSTER_ONLY`) with where they are set instead (`cluster_where`). `initial-scale: "0"` on a cluster
    without allow-zero-initial-scale is refused unless `refuse_zero_initial_scale` is false (the stack's
    admission check reports it, as KServe's webhook that acts first).
    """
    c = from_cluster(cluster, container_concurrency)
    ann = {k[len(PREFIX):]: v for k, v in (annotations or {}).items() if isinstance(k, str) and k.startswith(PREFIX)}
    # camelCase legacy keys (register.go) → kebab
    legacy = {"minScale": "min-scale", "maxScale": "max-scale", "initialScale": "initial-scale",
              "targetBurstCapacity": "target-burst-capacity", "panicWindowPercentage": "panic-window-percentage",
              "panicThresholdPercentage": "panic-threshold-percentage",
              "targetUtilizationPercentage": "target-utilization-percentage", "scaleDownDelay": "scale-down-delay",
              "scaleToZeroPodRetentionPeriod": "scale-to-zero-pod-retention-period",
              "metricAggregationAlgorithm": "metric-aggregation-algorithm"}
    ann = {legacy.get(k, k): v for k, v in ann.items()}
    upd: dict[str, Any] = {}

    def bad(key: str, allowed: str) -> None:
        problems.append(Problem(f"{path}[{PREFIX}{key}]", ann[key], allowed))

    def number(key: str, lo: float | None = None, hi: float | None = None, integer: bool = False) -> float | None:
        if key not in ann:
            return None
        v = _num(ann[key], integer)
        if v is None or (integer and not float(v).is_integer()) or (lo is not None and v < lo) or \
                (hi is not None and v > hi):
            rng = (f" between {lo} and {hi}" if lo is not None and hi is not None
                   else (f" >= {lo}" if lo is not None else ""))
            bad(key, f"expected {'an integer' if integer else 'a number'}{rng} (as a string)")
            return None
        return v

    def duration(key: str, lo: float, hi: float, whole: bool = False) -> float | None:
        if key not in ann:
            return None
        v = parse_duration(ann[key]) if isinstance(ann[key], str) else _num(ann[key])
        if v is None or v < lo or v > hi or (whole and not float(v).is_integer()):
            # annotation_validation.go: window and scale-down-delay "with at most second precision"
            bad(key, f"expected a duration like '60s' between {lo:g}s and {hi:g}s"
                + (" in whole seconds" if whole else ""))
            return None
        return v

    known = {"class", "metric", "target", "target-utilization-percentage", "target-burst-capacity", "min-scale",
             "max-scale", "initial-scale", "activation-scale", "scale-down-delay", "window",
             "panic-window-percentage", "panic-threshold-percentage", "scale-to-zero-pod-retention-period",
             "metric-aggregation-algorithm"}
    for k in ann:
        if k in CLUSTER_ONLY:
            bad(k, f"not a per-revision annotation in Knative (the cluster ignores it): {k} is a cluster-wide "
                   f"setting of knative-serving/{CONFIG_AUTOSCALER}; set it in {cluster_where}")
        elif k not in known:
            import difflib
            close = difflib.get_close_matches(k, sorted(known), n=1)
            bad(k, f"unknown autoscaling annotation; did you mean {PREFIX}{close[0]}?" if close else
                "unknown autoscaling annotation")

    # KServe's SetAutoScalingAnnotations (pkg/controller/v1alpha1/utils/utils.go) sets the class only where the
    # ISVC has no class annotation, and writes scaleMetric, scaleTarget, minReplicas and a non-zero maxReplicas
    # (the keywords) over its own metric, target, min-scale and max-scale annotations: those count, and are
    # checked, only without them.
    cls = ann.get("class", autoscaler_class)
    if cls is not None:
        if cls not in (KPA_CLASS, HPA_CLASS):
            if "class" in ann:
                bad("class", f"expected {KPA_CLASS!r} or {HPA_CLASS!r}")
        else:
            upd["autoscaler_class"] = cls
    own_metric = metric is None and "metric" in ann
    m = ann["metric"] if own_metric else metric
    if m is not None:
        if m not in ("concurrency", "rps", "cpu", "memory"):
            if own_metric:
                bad("metric", "expected one of 'concurrency', 'rps', 'cpu', 'memory'")
        elif own_metric and upd.get("autoscaler_class", c.autoscaler_class) == KPA_CLASS and \
                m not in ("concurrency", "rps"):
            # annotation_validation.go validateMetric: the KPA class scales on concurrency or rps only
            bad("metric", f"expected 'concurrency' or 'rps' with the {KPA_CLASS!r} class ('cpu' and 'memory' need "
                          f"the {HPA_CLASS!r} class)")
        else:
            upd["metric"] = m
    if upd.get("metric", c.metric) == "rps":  # target.go: only concurrency reads the ConfigMap's percentage
        upd["target_utilization"] = RPS_TARGET_UTILIZATION
    t = number("target", lo=0.01) if target is None else target
    if t is not None:
        upd["target"] = float(t)
    v = number("target-utilization-percentage", lo=1, hi=100)
    if v is not None:
        upd["target_utilization"] = v / 100.0
    v = None
    if "target-burst-capacity" in ann:  # annotation_validation.go validateFloats: >= 0, or exactly -1 (unlimited)
        v = _num(ann["target-burst-capacity"])
        if v is None or (v < 0 and v != -1):
            bad("target-burst-capacity", "expected a number >= 0, or -1 for unlimited (as a string)")
            v = None
    if v is not None:
        upd["target_burst_capacity"] = v
    v = duration("window", 6.0, 3600.0, whole=True)
    if v is not None:
        upd["stable_window_s"] = v
    v = number("panic-window-percentage", lo=1, hi=100)
    if v is not None:
        upd["panic_window_percentage"] = v
    v = number("panic-threshold-percentage", lo=110, hi=1000)
    if v is not None:
        upd["panic_threshold_percentage"] = v
    v = duration("scale-down-delay", 0.0, 3600.0, whole=True)
    if v is not None:
        upd["scale_down_delay_s"] = v
    v = duration("scale-to-zero-pod-retention-period", 0.0, 3600.0)
    if v is not None:
        upd["scale_to_zero_pod_retention_s"] = v
    v = number("min-scale", lo=0, integer=True) if min_scale is None else min_scale   # KServe writes min-scale
    upd["min_scale"] = int(v) if v is not None else c.min_scale
    v = number("max-scale", lo=0, integer=True) if max_scale is None else max_scale   # ... and a non-zero max
    explicit_max = int(v) if v is not None else None
    upd["max_scale"] = explicit_max if explicit_max is not None else c.max_scale
    limit = cluster.max_scale_limit
    if limit and explicit_max is not None and not 0 < explicit_max <= limit:
        # annotation_validation.go validateMaxScaleWithinLimit (a max-scale left to the cluster is within it)
        problems.append(Problem(f"{path}[{PREFIX}max-scale]", explicit_max, f"expected an integer between 1 and "
                                f"max-scale-limit ({limit}) of knative-serving/{CONFIG_AUTOSCALER}"))
    v = number("initial-scale", lo=0, integer=True)
    if v == 0 and not cluster.allow_zero_initial_scale and refuse_zero_initial_scale:
        bad("initial-scale", f"initial-scale 0 needs allow-zero-initial-scale: \"true\" in knative-serving/"
                             f"{CONFIG_AUTOSCALER} ({cluster_where}); Knative refuses it otherwise "
                             "(annotation_validation.go validateInitialScale)")
    elif v is not None and (v or cluster.allow_zero_initial_scale):  # else GetInitialScale keeps the cluster's
        upd["initial_scale"] = int(v)
    # annotation_validation.go validateMinMaxScale: an int32, min-scale <= it ("min-scale=%d is greater than
    # activation-scale=%d"), <= a non-zero max-scale ("max-scale=%d is less than activation-scale=%d"), and > 1.
    if "activation-scale" in ann:
        v = _num(ann["activation-scale"], integer=True)
        lo, hi = max(2, upd["min_scale"]), upd["max_scale"]
        if v is None or v < lo or (hi and v > hi) or v >= 2**31:
            expected = f"expected an integer >= {lo}" + (f" and <= {hi}" if hi else "")
            bad("activation-scale", f"{expected} (as a string)" + (
                f": at least 2 and between min-scale ({upd['min_scale']}) and max-scale ({hi or 'unbounded'}), "
                "which KServe writes from minReplicas and maxReplicas; Knative refuses the revision otherwise "
                "(annotation_validation.go validateMinMaxScale)" if hi or lo > 2 else ""))
        else:
            upd["activation_scale"] = int(v)
    if "metric-aggregation-algorithm" in ann:
        # metric_lifecycle.go AggregationAlgorithm: the alternate casing reads as weighted-exponential
        v = {"linear": "linear", "weighted-exponential": "weighted-exponential",
             "weightedExponential": "weighted-exponential"}.get(ann["metric-aggregation-algorithm"]) \
            if isinstance(ann["metric-aggregation-algorithm"], str) else None
        if v is None:
            bad("metric-aggregation-algorithm",
                "expected 'linear' or 'weighted-exponential' (or 'weightedExponential')")
        else:
            upd["aggregation"] = v
    deadline = _progress_deadline((annotations or {}).get(PROGRESS_DEADLINE_KEY), path, problems)
    if deadline is not None:
        upd["progress_deadline_s"] = deadline
    c = replace(c, **upd)
    if check_bounds and c.max_scale and c.min_scale > c.max_scale:
        problems.append(Problem(f"{path}[{PREFIX}min-scale]", c.min_scale,
                                f"min-scale must not exceed max-scale ({c.max_scale})"))
    return c


def progress_deadline_s(value: Any) -> tuple[float | None, str | None]:
    """`serving.knative.dev/progress-deadline` as Knative admits it (`revision_validation.go:
    validateProgressDeadlineAnnotation`: a Go duration at second precision) and Kubernetes then accepts it on the
    Deployment (`progressDeadlineSeconds`, an int32 that must exceed minReadySeconds 0): (seconds, None), or
    (None, what is allowed). The stack's check and the simulation's reader both use it."""
    seconds = parse_duration(value) if isinstance(value, str) and value == value.strip() else None
    if seconds is None or not 0 < seconds <= PROGRESS_DEADLINE_MAX_S:
        return None, ('expected a positive duration in whole seconds such as "20m" (Knative '
                      "revision_validation.go; the Deployment's progressDeadlineSeconds must be > 0 and an int32)")
    if not float(seconds).is_integer():
        return None, (f'expected a positive duration in whole seconds such as "{math.ceil(seconds)}s" or "15m": '
                      "Knative refuses one below second precision (pkg/apis/serving/v1/revision_validation.go)")
    return seconds, None


def _progress_deadline(value: Any, path: str, problems: list[Problem]) -> float | None:
    """`progress_deadline_s` for a scenario's annotation: seconds, None if absent or refused (with a problem)."""
    if value is None:
        return None
    seconds, allowed = progress_deadline_s(value)
    if allowed:
        problems.append(Problem(f"{path}[{PROGRESS_DEADLINE_KEY}]", value, allowed))
    return seconds

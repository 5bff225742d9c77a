"""The Kubernetes HPA, pure: replica calculation, tolerance, stabilization windows and behavior policies.

Ports `pkg/controller/podautoscaler/replica_calculator.go: GetResourceReplicas/GetMetricReplicas` and
`horizontal.go: stabilizeRecommendationWithBehaviors, normalizeDesiredReplicasWithBehaviors,
calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors` (kubernetes/kubernetes, see
reference knative-kserve.md §5). Defaults (`pkg/apis/autoscaling/v2/defaults.go`): scale-up window 0 s,
policies Pods 4 / 15 s and Percent 100 / 15 s, select Max; scale-down window 300 s, Percent 100 / 15 s;
tolerance 0.1; sync period 15 s.

Tolerance per direction (KEP-4951 `HPAConfigurableTolerance`: alpha in Kubernetes 1.33, beta and on by default from
1.35): `behavior.scaleUp.tolerance` / `scaleDown.tolerance`, a resource.Quantity >= 0, each unset one the
controller's `--horizontal-pod-autoscaler-tolerance` (0.1; `horizontal.go: tolerancesForHpa`). A usage ratio r
keeps the current replicas while 1 − scaleDown ≤ r ≤ 1 + scaleUp (`replica_calculator.go: Tolerances.isWithin`),
in every calculation that uses the tolerance; a KEDA ScaledObject's behavior reaches its HPA the same way. The
stack refuses the field below Kubernetes 1.35 (stackconfig/autoscaling.py `check_hpa_behavior`), where the gate is
off by default and the API server refuses it.

Which pods count (`replica_calculator.go: groupPods`): Pending pods are *unready* for every metric (ignored, and
0 usage when the rebalanced ratio scales up); a Running pod without a sample is *missing* (on a scale-down it
counts as using the target — for CPU `max(100, target)` % of its request — on a scale-up 0); the readiness test
(a started but not Ready pod is unready) runs for CPU only. The loop (`hpa_loop.py`) passes a starting pod
(container up, model loading) as unready for CPU and as missing for a Pods metric: its server has no sample yet.
Every Ready pod reports (metrics-server's or the adapter's own lag is not modelled).

Numbers as Kubernetes computes them: CPU utilisation is an integer percent of the summed requests,
`int32(Σ usage·100 / Σ requests)` (`metrics/utilization.go: GetResourceUtilizationRatio`), before the ratio to
the target and the tolerance test, and again for the rebalanced ratio. Pods and External metrics are values in
milli-units: the simulation uses them unrounded (Kubernetes floors a Pods metric's mean to a milli-unit,
`GetMetricUsageRatio`: below 1/1000 of the target's unit, not modelled).
A KEDA ScaledObject's HPA (`HpaSpec.keda` set) reads an External metric with an AverageValue target instead:
`GetExternalPerPodMetricReplicas` — the total over the Deployment's status replicas, no readiness grouping, no
truncation, the same tolerance test.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from validation.errors import Problem

if TYPE_CHECKING:
    from simulation.autoscaler.keda import PrometheusMetric


@dataclass(frozen=True)
class Policy:
    type: str      # Pods | Percent
    value: int
    period_s: float


@dataclass(frozen=True)
class Rules:
    window_s: float
    policies: tuple[Policy, ...]
    select: str = "Max"   # Max | Min | Disabled
    tolerance: float | None = None   # this direction's `tolerance`; None: the controller's (HpaSpec.tolerance)


INT32_MAX = 2**31 - 1   # `value` is an int32 in autoscaling/v2
MAX_REPLICAS = 10_000   # the simulator's bound on an autoscaler's replica limits (every pod is simulated)
DEFAULT_UP = Rules(0.0, (Policy("Pods", 4, 15.0), Policy("Percent", 100, 15.0)), "Max")
DEFAULT_DOWN = Rules(300.0, (Policy("Percent", 100, 15.0),), "Max")


@dataclass(frozen=True)
class HpaSpec:
    min_replicas: int = 1
    max_replicas: int = 1
    metric: str = "cpu"               # cpu (Utilization %) | concurrency (custom Pods metric, AverageValue)
    target: float = 80.0              # % for cpu (KServe DefaultCPUUtilization), per-pod value otherwise
    tolerance: float = 0.1            # --horizontal-pod-autoscaler-tolerance: a direction without its own
    sync_period_s: float = 15.0
    scale_up: Rules = DEFAULT_UP
    scale_down: Rules = DEFAULT_DOWN
    # CPU utilisation of a GPU model server = CPU cores it uses / its CPU request. The GPU does the work: the
    # server's processes use about one core while serving (vLLM V1's engine-core loop, the API server) and a
    # little when idle, whatever the load. 0 = request unknown: the busy fraction stands in for utilisation.
    cpu_request_cores: float = 0.0
    cpu_busy_cores: float = 1.0
    cpu_idle_cores: float = 0.1
    keda: "PrometheusMetric | None" = None   # a KEDA ScaledObject's External metric from Prometheus (keda.py)

    def within_tolerance(self, ratio: float) -> bool:
        """`replica_calculator.go: Tolerances.isWithin`: `(1 − scaleDown) ≤ ratio ≤ (1 + scaleUp)`, each side its
        own tolerance, else the controller's. Written as this interval, not |1 − ratio| ≤ tolerance: the two differ
        in the last bit at the edge (88/80 = 1.1 ≤ 1 + 0.1 keeps the replicas; |1 − 1.1| = 0.10000000000000009)."""
        up, down = self.scale_up.tolerance, self.scale_down.tolerance
        up = self.tolerance if up is None else up
        down = self.tolerance if down is None else down
        return (1.0 - down) <= ratio <= (1.0 + up)

    def cpu_percent(self, busy_fraction: float) -> float:
        """Per-pod CPU utilisation (% of the request) for a pod busy this fraction of the sync period."""
        if not self.cpu_request_cores:
            return busy_fraction * 100.0
        used = self.cpu_idle_cores + busy_fraction * (self.cpu_busy_cores - self.cpu_idle_cores)
        return 100.0 * used / self.cpu_request_cores


@dataclass
class HpaCalculator:
    """State: past recommendations and past scale events (for the windows and policies)."""

    spec: HpaSpec
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    events: list[tuple[float, int]] = field(default_factory=list)   # (time, +added / −removed)

    def usage_ratio(self, metric_sum: float, pods: int) -> float:
        """The usage ratio over `pods` samples. CPU: `metrics/utilization.go: GetResourceUtilizationRatio`, the
        utilisation as an integer percent, `int32(Σ usage·100 / Σ requests)` — with equal requests per pod the
        floored mean of the pods' percentages (rounded to 1e-9 first, so that a whole percent held as 87.99…9 in
        binary is 88) — over the target. Pods metric: `GetMetricUsageRatio`, the mean value over the target."""
        mean = metric_sum / pods
        if self.spec.metric == "cpu":
            mean = float(math.floor(round(mean, 9)))
        return mean / self.spec.target

    def replicas_for_metric(self, current: int, ready: int, unready: int, metric_sum: float,
                            missing: int = 0) -> int:
        """`replica_calculator.go: GetResourceReplicas` (cpu) / `calcPlainMetricReplicas` (a Pods metric).

        `ready` pods report and their values sum to `metric_sum`; `unready` ones (Pending; for CPU also started
        and not Ready) are ignored unless the ratio scales up, then count as 0; `missing` ones (Running, no
        sample) count as the target going down (CPU: `max(100, target)` % of the request) and as 0 going up.
        Each ratio passes `usage_ratio` (CPU's whole percent) and `within_tolerance`; a rebalanced ratio that
        flips the direction, or a replica count that moves against it, keeps the current replicas."""
        s = self.spec
        if ready <= 0:
            return current   # "did not receive metrics for targeted pods": the controller keeps the scale
        ratio = self.usage_ratio(metric_sum, ready)
        rebalance_unready = unready > 0 and ratio > 1.0
        if not rebalance_unready and missing == 0:
            if s.within_tolerance(ratio):
                return current
            return int(math.ceil(ratio * ready))
        total, pods = metric_sum, ready
        if missing and ratio != 1.0:
            # On a scale-down a missing pod counts as using the target (CPU: all of its request, or the target
            # when that is above 100 %); on a scale-up as 0. At exactly 1 upstream fills in nothing.
            fill = (max(100.0, s.target) if s.metric == "cpu" else s.target) if ratio < 1.0 else 0.0
            total, pods = total + fill * missing, pods + missing
        if rebalance_unready:
            pods += unready   # on a scale-up an unready pod counts as 0
        new_ratio = self.usage_ratio(total, pods)
        if s.within_tolerance(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
            return current
        new = int(math.ceil(new_ratio * pods))
        if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
            return current   # the pods counted move it against the direction: keep the workload as it is
        return new

    def replicas_for_external(self, status_replicas: int, usage: float) -> int:
        """`replica_calculator.go: GetExternalPerPodMetricReplicas` (an External metric, AverageValue target, as
        KEDA's HPA has): the metric's total against target × status replicas (all the Deployment's pods, ready or
        not; no readiness grouping, no whole-percent truncation); outside the tolerance (`Tolerances.isWithin`),
        ceil(total / target). At 0 status replicas the ratio is infinite (or NaN): never within."""
        s = self.spec
        if status_replicas > 0 and s.within_tolerance(usage / (s.target * status_replicas)):
            return status_replicas
        return int(math.ceil(usage / s.target))

    def decide(self, now: float, current: int, desired: int) -> int:
        """`horizontal.go: normalizeDesiredReplicasWithBehaviors`: stabilize (the lowest recommendation of the
        scale-up window, the highest of the scale-down window; each window strict, as `stabilizeRecommendation
        WithBehaviors` compares `rec.timestamp.After(cutoff)`), rate-limit, clamp to [min, max]."""
        s = self.spec
        self.recommendations.append((now, desired))
        keep = max(s.scale_up.window_s, s.scale_down.window_s)
        self.recommendations = [(t, r) for t, r in self.recommendations if t > now - keep - 1e-9]
        # horizontal.go stabilizeRecommendationWithBehaviors: a recommendation counts while
        # `rec.timestamp.After(now − window)`, strictly: one made exactly a window ago is out.
        up = min([r for t, r in self.recommendations if t > now - s.scale_up.window_s + 1e-9] or [desired])
        down = max([r for t, r in self.recommendations if t > now - s.scale_down.window_s + 1e-9] or [desired])
        rec = current
        if rec < up:
            rec = up
        if rec > down:
            rec = down
        if rec > current:
            rec = min(rec, max(current, self._limit(self.spec.scale_up, now, current, up=True)))
        elif rec < current:
            rec = max(rec, min(current, self._limit(self.spec.scale_down, now, current, up=False)))
        rec = max(s.min_replicas, min(s.max_replicas, rec))
        if rec != current:
            self.events.append((now, rec - current))
        horizon = max([p.period_s for p in s.scale_up.policies + s.scale_down.policies] or [0.0])
        self.events = [(t, d) for t, d in self.events if t > now - horizon - 1e-9]
        return rec

    def _period_start(self, now: float, current: int, period_s: float) -> int:
        """periodStartReplicas = current − added + deleted within the policy period (getReplicasChangePerPeriod)."""
        added = sum(d for t, d in self.events if d > 0 and t > now - period_s)
        deleted = -sum(d for t, d in self.events if d < 0 and t > now - period_s)
        return current - added + deleted

    def _limit(self, rules: Any, now: float, current: int, up: bool) -> int:
        """calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithScalingRules (horizontal.go): each
        policy allows `value` pods or percent from the period's start; `Max` picks the most permissive."""
        if rules.select == "Disabled":
            return current
        limits = []
        for p in rules.policies:
            start = self._period_start(now, current, p.period_s)
            if p.type == "Pods":
                limits.append(start + p.value if up else start - p.value)
            else:
                limits.append(int(math.ceil(start * (1 + p.value / 100.0))) if up
                              else int(start * (1 - p.value / 100.0)))
        if not limits:
            return current
        # `Max` picks the most permissive limit: the highest going up, the lowest going down.
        return max(limits) if (rules.select == "Max") == up else min(limits)


def behavior_rules(behavior: Any, path: str, problems: list[Problem]) -> tuple[Rules, Rules]:
    """(scaleUp, scaleDown) rules of an autoscaling/v2 `behavior` mapping (absent → the defaults)."""
    behavior = behavior or {}
    if not isinstance(behavior, dict):
        problems.append(Problem(path, behavior, "expected a mapping"))
        behavior = {}
    return (rules_from_manifest(behavior.get("scaleUp"), DEFAULT_UP, f"{path}.scaleUp", problems),
            rules_from_manifest(behavior.get("scaleDown"), DEFAULT_DOWN, f"{path}.scaleDown", problems))


def rules_from_manifest(data: Any, default: Rules, path: str, problems: list[Problem]) -> Rules:
    """Read an autoscaling/v2 `HPAScalingRules` mapping (fields absent or null → the Kubernetes default: they are
    optional pointers, and `SetDefaults_HorizontalPodAutoscalerBehavior` fills a nil one)."""
    if data is None:
        return default
    if not isinstance(data, dict):
        problems.append(Problem(path, data, "expected a mapping (HPAScalingRules)"))
        return default
    window = data.get("stabilizationWindowSeconds")
    window = default.window_s if window is None else window
    if not isinstance(window, (int, float)) or isinstance(window, bool) or not 0 <= window <= 3600 or \
            not float(window).is_integer():  # an int32 in autoscaling/v2
        problems.append(Problem(f"{path}.stabilizationWindowSeconds", window, "expected seconds between 0 and 3600"))
        window = default.window_s
    select = data.get("selectPolicy")
    select = default.select if select is None else select
    if select not in ("Max", "Min", "Disabled"):
        problems.append(Problem(f"{path}.selectPolicy", select, "expected 'Max', 'Min' or 'Disabled'"))
        select = default.select
    policies = default.policies
    if data.get("policies") is not None:
        raw = data["policies"]
        policies = ()
        if not isinstance(raw, list):
            problems.append(Problem(f"{path}.policies", raw, "expected a list of {type, value, periodSeconds}"))
            raw = []
        elif not raw:  # validation.go validateScalingRules; with no policy the HPA would never scale this way
            problems.append(Problem(f"{path}.policies", raw, "expected at least one {type, value, periodSeconds}"))
        out = []
        for i, p in enumerate(raw):
            pp = f"{path}.policies[{i}]"
            if not isinstance(p, dict) or p.get("type") not in ("Pods", "Percent"):
                problems.append(Problem(pp, p, "expected {type: Pods|Percent, value: int > 0, periodSeconds: 1..1800}"))
                continue
            v, per = p.get("value"), p.get("periodSeconds")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v <= INT32_MAX or \
                    not float(v).is_integer():
                problems.append(Problem(f"{pp}.value", v, f"expected an integer > 0 (at most {INT32_MAX})"))
                continue
            if not isinstance(per, (int, float)) or isinstance(per, bool) or not 0 < per <= 1800 or \
                    not float(per).is_integer():
                problems.append(Problem(f"{pp}.periodSeconds", per, "expected seconds between 1 and 1800"))
                continue
            out.append(Policy(p["type"], int(v), float(per)))
        policies = tuple(out)
    tolerance = default.tolerance
    if data.get("tolerance") is not None:
        tolerance = tolerance_value(data["tolerance"])
        if tolerance is None:
            problems.append(Problem(f"{path}.tolerance", data["tolerance"], "expected a quantity >= 0 such as 0.05 "
                                    "or \"50m\" (a fraction of the target: 0.05 lets the metric stray 5 %)"))
            tolerance = default.tolerance
    return Rules(float(window), policies, select, tolerance)


# resource.Quantity's grammar (apimachinery quantity.go parseQuantityString): sign, digits with an optional
# fraction, then a binary (Ki…Ei), decimal (n u m k M G T P E) or integer exponent (e3, E-2) suffix.
_QUANTITY = re.compile(r"([+-]?)((?:[0-9]+(?:\.[0-9]*)?)|(?:\.[0-9]+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|"
                       r"[eE]([+-]?[0-9]+))?", re.ASCII)
_DECIMAL_SUFFIX = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def _quantity(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    m = _QUANTITY.fullmatch(value)
    if m is None:
        return None
    sign, digits, binary, decimal, exponent = m.groups()
    number = float(Decimal(sign + digits).scaleb(_DECIMAL_SUFFIX.get(decimal or "", 0) + int(exponent or 0)))
    return number * 2.0 ** (10 * ("KMGTPE".index(binary[0]) + 1)) if binary else number


def tolerance_value(value: Any) -> float | None:
    """An HPAScalingRules `tolerance` (a resource.Quantity: a number, or a string such as "0.05", "50m", "5e-2") as
    the controller reads it (`AsApproximateFloat64`); None when it is not a quantity or is negative (validation.go:
    "must be greater or equal to zero")."""
    try:
        number = _quantity(value)
    except (ArithmeticError, ValueError):   # past a float (or Decimal's exponents, or int's digits)
        return None
    if number is None:
        return None
    return number + 0.0 if math.isfinite(number) and number >= 0 else None   # + 0.0: "-0" is 0

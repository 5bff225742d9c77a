"""The simulated HPA against Kubernetes' own tests (kubernetes/kubernetes `pkg/controller/podautoscaler`).

Each row names the upstream test it comes from: `replica_calculator_test.go` (GetResourceReplicas, the CPU path, and
calcPlainMetricReplicas, a Pods metric), `horizontal_test.go` (TestNormalizeDesiredReplicas, TestScalingWithRules),
`metrics/utilization_test.go`, or, where no upstream test pins the rule, the source line itself (review rev13
findings 1, 3, 4 and 5). Upstream states CPU as milli-cores per container over 1-core requests on 2 containers, so a
pod's percentage is its level / 10; where requests differ per pod the rows use the sum rule the controller applies
(Σ usage·100 / Σ requests), which equal requests per pod reproduce. The four findings' rows fail on the code before
the fix: CPU utilisation as an unfloored float, |1 − r| ≤ tol, a stabilization window that kept the recommendation
exactly one window old, and a Pods metric that ignored a starting pod on a scale-down instead of counting it at the
target.
"""

from __future__ import annotations

import pytest
import simpy

from simulation.autoscaler.hpa import DEFAULT_DOWN, DEFAULT_UP, HpaCalculator, HpaSpec, Policy, Rules
from simulation.autoscaler.hpa_loop import HpaLoop
from simulation.pod import PENDING, READY, STARTING


def cpu(target: float, up_tol: float | None = None, down_tol: float | None = None, **kw) -> HpaCalculator:
    up = Rules(DEFAULT_UP.window_s, DEFAULT_UP.policies, DEFAULT_UP.select, up_tol)
    down = Rules(DEFAULT_DOWN.window_s, DEFAULT_DOWN.policies, DEFAULT_DOWN.select, down_tol)
    return HpaCalculator(HpaSpec(min_replicas=1, max_replicas=1000, metric="cpu", target=target,
                                 scale_up=up, scale_down=down, **kw))


def pods_metric(target: float, up_tol: float | None = None) -> HpaCalculator:
    up = Rules(DEFAULT_UP.window_s, DEFAULT_UP.policies, DEFAULT_UP.select, up_tol)
    return HpaCalculator(HpaSpec(min_replicas=1, max_replicas=1000, metric="concurrency", target=target,
                                 scale_up=up))


# -- GetResourceReplicas (CPU utilisation) ------------------------------------------------------------------------

@pytest.mark.parametrize("case, current, percents, unready, missing, target, want", [
    ("TestReplicaCalcScaleUp", 3, [30, 50, 70], 0, 0, 30, 5),
    ("TestReplicaCalcScaleUpUnreadyLessScale", 3, [50, 70], 1, 0, 30, 4),     # unready pod at 0: 120/3 = 40
    ("TestReplicaCalcScaleUpHotCpuLessScale", 3, [50, 70], 1, 0, 30, 4),      # a hot-CPU pod is unready too
    ("TestReplicaCalcScaleUpUnreadyNoScale", 3, [40], 2, 0, 30, 3),           # 40/3 = 13: direction flips
    ("TestReplicaCalcScaleUpIgnoresFailedPods", 2, [50, 70], 0, 0, 30, 4),    # Failed pods: not counted at all
    ("TestReplicaCalcScaleDown", 5, [10, 30, 50, 25, 25], 0, 0, 50, 3),
    ("TestReplicaCalcScaleDownIncludeUnreadyPods", 5, [10, 30, 50], 2, 0, 50, 2),
    ("TestReplicaCalcScaleDownExcludeUnscheduledPods", 5, [10], 4, 0, 50, 1),  # 4 Pending pods
    ("TestReplicaCalcScaleDownIgnoreHotCpuPods", 5, [10, 30, 50], 2, 0, 50, 2),
    ("TestReplicaCalcTolerance", 3, [102, 102, 102], 0, 0, 100, 3),           # Σ3060m / Σ3000m = 102 %
    ("TestReplicaCalcMissingMetrics", 4, [40, 9.5], 0, 2, 100, 3),            # 24 % (24.75 floored); 62 → 3
    ("TestReplicaCalcMissingMetricsNoChangeEq", 2, [100], 0, 1, 100, 2),      # ratio exactly 1: nothing filled
    ("TestReplicaCalcMissingMetricsNoChangeGt", 2, [190], 0, 1, 100, 2),      # 190 + 0 → 95 %: within
    ("TestReplicaCalcMissingMetricsNoChangeLt", 2, [60], 0, 1, 100, 2),       # 60 + 100 → 80 %: ceil(1.6) = 2
    ("TestReplicaCalcMissingMetricsUnreadyChange", 3, [45], 1, 1, 50, 3),     # 45 + 100 → 72 %: flips up
    ("TestReplicaCalcMissingMetricsHotCpuNoChange", 3, [45], 1, 1, 50, 3),
    ("TestReplicaCalcMissingMetricsUnreadyScaleUp", 3, [200], 1, 1, 50, 4),   # missing and unready at 0: 66 %
    ("TestReplicaCalcMissingMetricsHotCpuScaleUp", 3, [200], 1, 1, 50, 4),
    ("TestReplicaCalcMissingMetricsUnreadyScaleDown", 4, [10, 10], 1, 1, 50, 3),  # 10, 10, 100 → 40 %
    ("TestReplicaCalcDuringRollingUpdateWithMaxSurge", 2, [10, 10], 0, 1, 50, 2),  # 40 % → 3 > 2: keep
])
def test_get_resource_replicas(case, current, percents, unready, missing, target, want):
    missing_pods = (missing,) if missing else ()   # rows without missing pods run on the pre-fix signature too
    got = cpu(target).replicas_for_metric(current, len(percents), unready, float(sum(percents)), *missing_pods)
    assert got == want, case


def test_missing_pods_on_a_scale_down_count_as_the_target_when_it_is_above_100_percent():
    """After TestReplicaCalcMissingMetricsScaleDownTargetOver100 (there with unequal requests): a missing pod on a
    scale-down uses max(100, target utilisation) % of its request. One idle ready pod and 3
    missing: target 300 → 0, 300, 300, 300 = 225 % → 0.75 → 3 (100 % would give 75 % → 1); target 50 → 100 %
    each (not the target): 75 % → 1.5, the direction flips → keep 4 (the target would give 37 % → 3)."""
    assert cpu(300).replicas_for_metric(4, 1, 0, 0.0, missing=3) == 3
    assert cpu(50).replicas_for_metric(4, 1, 0, 0.0, missing=3) == 4


@pytest.mark.parametrize("case, down, up, util, want", [
    ("Outside of a 0% tolerance", 0.0, 0.0, 101, 4),
    ("Within a 200% scale-up tolerance", 0.1, 2.0, 190, 3),
    ("Outside 8% scale-up tolerance (and superfuous scale-down tolerance)", 2.0, 0.08, 109, 4),
    ("Within a 36% scale-down tolerance", 0.36, 0.1, 65, 3),
    ("Outside a 34% scale-down tolerance", 0.34, 0.1, 65, 2),
])
def test_configurable_tolerance(case, down, up, util, want):
    """TestReplicaCalcConfigurableTolerance (Tolerances{scaleDown, scaleUp}; 3 pods, target 100 %)."""
    assert cpu(100, up_tol=up, down_tol=down).replicas_for_metric(3, 3, 0, 3.0 * util) == want, case


def test_utilisation_is_the_ratio_of_sums_in_whole_percent():
    """metrics/utilization_test.go TestGetResourceUtilizationRatioBaseCase: 50m and 76m of 100m each, target 50 →
    63 %, ratio 1.26 → ceil(2.52) = 3. TestReplicaCalcMissingMetrics' expectedUtilization 24 (24.75 floored) and
    TestReplicaCalcSuperfluousMetrics' 587 (587.5 floored): finding 1."""
    assert cpu(50).replicas_for_metric(2, 2, 0, 126.0) == 3
    assert cpu(50).usage_ratio(126.0, 2) == 1.26
    assert cpu(100).usage_ratio(49.5, 2) == 0.24
    assert cpu(100).usage_ratio(4 * 587.5, 4) == 5.87


@pytest.mark.parametrize("percent, want", [
    (120.5, 15),   # int32(12050·100/10000) = 120 → 1.5 → 15 (the unfloored 1.50625 gave 16)
    (88.9, 10),    # 88 → 1.1: within the tolerance (88.9/80 = 1.111 gave 12)
    (87.99999999999999, 10),   # a whole percent a float sum lands just under is still that percent
])
def test_cpu_utilisation_is_floored_to_a_whole_percent_before_the_ratio(percent, want):
    """Finding 1: metrics/utilization.go GetResourceUtilizationRatio takes the utilisation as an int32 percent,
    Σ usage·100 / Σ requests in integer milli-cores, whose ratio to the target GetResourceReplicas tests and
    multiplies. 10 ready pods, target 80 %."""
    assert cpu(80).replicas_for_metric(10, 10, 0, 10 * percent) == want


def test_the_rebalanced_ratio_is_floored_too():
    """Finding 1, the re-run: GetResourceReplicas calls GetResourceUtilizationRatio again with the unready pods at 0.
    3 ready at 59 %, 1 unready, target 40: 177/4 = 44.25 → 44 % → 1.1: within, keep 4 (44.25/40 → 5)."""
    assert cpu(40).replicas_for_metric(4, 3, 1, 177.0) == 4


def test_a_pods_metric_is_not_floored():
    """calcPlainMetricReplicas / GetMetricUsageRatio take the mean value (milli-units), no whole-unit truncation:
    10 pods at 4.45 of a target 4 → 1.1125 → ceil(11.125) = 12."""
    assert pods_metric(4.0).replicas_for_metric(10, 10, 0, 44.5) == 12


# -- Tolerances.isWithin at its edges (finding 3) ----------------------------------------------------------------

def test_tolerance_is_the_interval_not_the_distance():
    """Finding 3: replica_calculator.go Tolerances.isWithin keeps the replicas while (1 − scaleDown) ≤ r ≤
    (1 + scaleUp). 88/80 is 1.1 ≤ 1 + 0.1 (|1 − 1.1| is 0.10000000000000009 > 0.1); 84/80 with scaleUp.tolerance
    0.05 likewise; the scale-down edge 72/80 kept both ways (the review's passing row)."""
    assert cpu(80).replicas_for_metric(10, 10, 0, 880.0) == 10
    assert cpu(80, up_tol=0.05).replicas_for_metric(10, 10, 0, 840.0) == 10
    assert cpu(80).replicas_for_metric(10, 10, 0, 720.0) == 10
    assert cpu(80).spec.within_tolerance(1.1) and not cpu(80).spec.within_tolerance(1.1000000000000003)


def test_a_kedas_external_metric_uses_the_interval():
    """GetExternalPerPodMetricReplicas: the same isWithin on usage / (target × statusReplicas), no truncation.
    10 pods, target 4 per pod, total 44 → 1.1: keep; 44.5 → ceil(44.5 / 4) = 12."""
    keda = pods_metric(4.0)
    assert keda.replicas_for_external(10, 44.0) == 10
    assert keda.replicas_for_external(10, 44.5) == 12


@pytest.mark.parametrize("case, status, total, target, up_tol, want", [
    ("TestReplicaCalcScaleUpPerPodCMExternal", 3, 8600, 2150, None, 4),
    ("TestReplicaCalcScaleDownPerPodCMExternal", 5, 8600, 2867, None, 3),
    ("TestReplicaCalcTolerancePerPodCMExternal", 3, 8600, 2900, None, 3),
    ("TestReplicaCalcConfigurableTolerancePerPodCMExternal", 3, 8600, 2800, 0.01, 4),
])
def test_external_per_pod_metric(case, status, total, target, up_tol, want):
    """Values in milli-units, as upstream states them (the same float divisions as Go's)."""
    assert pods_metric(target, up_tol).replicas_for_external(status, total) == want, case


# -- calcPlainMetricReplicas (a Pods metric) ----------------------------------------------------------------------

@pytest.mark.parametrize("case, current, values, missing, target, up_tol, want", [
    ("TestReplicaCalcScaleUpCM", 3, [20000, 10000, 30000], 0, 15000, None, 4),
    # a not-Ready pod with a sample is ready for a Pods metric (groupPods' readiness test is CPU's only)
    ("TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale", 3, [50000, 10000, 30000], 0, 15000, None, 6),
    ("TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown", 3, [50000, 15000, 30000], 0, 15000, None, 7),
    ("TestReplicaCalcScaleDownCM", 5, [12000] * 5, 0, 20000, None, 3),
    ("TestReplicaCalcToleranceCM", 3, [20000, 21000, 21000], 0, 20000, None, 3),
    ("TestReplicaCalcConfigurableToleranceCM", 3, [20000, 21000, 21000], 0, 20000, 0.01, 4),
    ("TestPlainMetricReplicaCalcMissingMetricsNoChangeEq", 5, [20000, 19000, 21000], 2, 20000, None, 5),
    ("TestReplicaCalcDuringRollingUpdateWithMaxSurgeCM", 2, [10000, 10000], 1, 17000, None, 2),  # 10, 10, 17 → 3
])
def test_calc_plain_metric_replicas(case, current, values, missing, target, up_tol, want):
    missing_pods = (missing,) if missing else ()
    got = pods_metric(target, up_tol).replicas_for_metric(current, len(values), 0, float(sum(values)), *missing_pods)
    assert got == want, case


def test_pods_metric_missing_pods_count_as_the_target_on_a_scale_down():
    """Finding 5: calcPlainMetricReplicas counts a missing pod as using the target on a scale-down. 4 idle Ready
    pods and 2 started without a sample, target 4: 0, 0, 0, 0, 4, 4 → 1.33 → 2 (ignoring them gave 0).
    On a scale-up they count as 0: 4 pods at 8 and 2 missing → 32/6 = 5.33 → 1.33 → ceil(1.33 × 6) = 8."""
    c = pods_metric(4.0)
    assert c.replicas_for_metric(6, 4, 0, 0.0, missing=2) == 2
    assert c.replicas_for_metric(6, 4, 0, 32.0, missing=2) == 8
    assert c.replicas_for_metric(6, 4, 2, 32.0) == 8                    # Pending ones: 0 as well


class FakePod:
    def __init__(self, state: str, in_flight: float) -> None:
        self.state, self.in_flight = state, in_flight

    def scrape(self, period: float) -> tuple[float, float, float, int]:
        return (self.in_flight, self.in_flight, self.in_flight, 0)


def run_loop(metric: str, target: float, pods: list[FakePod], window_s: float = 0.0) -> int:
    sim = type("FakeSim", (), {})()
    sim.env = simpy.Environment()
    sim.endpoints = [p for p in pods if p.state == READY]
    sim.pods = pods
    sim.replicas = len(pods)
    sim.set_replicas = lambda n: setattr(sim, "replicas", n)
    down = Rules(window_s, DEFAULT_DOWN.policies, DEFAULT_DOWN.select)
    HpaLoop(sim, HpaSpec(min_replicas=1, max_replicas=20, metric=metric, target=target, scale_down=down))
    sim.env.run(until=15.5)
    return sim.replicas


def test_the_loop_passes_a_starting_pod_as_missing_for_a_pods_metric_and_unready_for_cpu():
    """Finding 5 end to end (hpa_loop.py → replica_calculator.go groupPods): 4 idle Ready pods, 2 starting, a 0 s
    scale-down window. Pods metric, target 4: the starting pods count at the target → 2 (before: 0, clamped to 1).
    CPU: the readiness test makes them unready, ignored on a scale-down → the idle pods' ratio alone."""
    pods = [FakePod(READY, 0.0) for _ in range(4)] + [FakePod(STARTING, 0.0) for _ in range(2)]
    assert run_loop("concurrency", 4.0, pods) == 2
    assert run_loop("cpu", 80.0, pods) == 1                       # 0 % over 4 ready: ceil(0) → min 1
    pending = [FakePod(READY, 0.0) for _ in range(4)] + [FakePod(PENDING, 0.0) for _ in range(2)]
    assert run_loop("concurrency", 4.0, pending) == 1            # Pending is unready for every metric


# -- stabilizeRecommendationWithBehaviors (finding 4) --------------------------------------------------------------

@pytest.mark.parametrize("case, recs, desired, want", [
    ("empty log", [], 5, 5),
    ("stabilize", [(4, 120), (5, 60)], 3, 5),
    ("no stabilize", [(1, 120), (2, 60)], 3, 3),
    ("no stabilize - old recommendations", [(10, 600), (9, 540)], 3, 3),
    ("stabilize - old recommendations", [(10, 600), (4, 60), (5, 120), (9, 540)], 3, 5),
    ("one window old (horizontal.go stabilizeRecommendationWithBehaviors: strictly after the cutoff)", [(6, 300)],
     3, 3),
    ("just inside the window", [(6, 299)], 3, 6),
])
def test_normalize_desired_replicas(case, recs, desired, want):
    """horizontal_test.go TestNormalizeDesiredReplicas (5 min scale-down window; current 5, so no rate limit
    applies). Recommendations are (replicas, seconds ago). The last two rows: finding 4, a recommendation exactly
    one window old is outside (a recommendation counts only if its time is after the cutoff, strictly), one a
    second younger inside."""
    now = 1000.0
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=10))
    c.recommendations = [(now - age, r) for r, age in recs]
    current = max(5, want)
    assert c.decide(now, current, desired) == want, case


def test_scale_down_lands_on_the_window_not_one_sync_later():
    """Finding 4 over syncs: recommendation 5 at t = 0, then 1 every 15 s. The t = 0 sample leaves at t = 300."""
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=10, target=80.0))
    assert c.decide(0.0, 5, 5) == 5
    assert [c.decide(float(t), 5, 1) for t in range(15, 301, 15)][-2:] == [5, 1]


def generate_scaling_rules(pods: int, pods_period: int, percent: int, percent_period: int, window: int) -> Rules:
    """horizontal_test.go generateScalingRules (select Max; a zero value leaves that policy out)."""
    policies = ((Policy("Pods", pods, float(pods_period)),) if pods else ()) + \
        ((Policy("Percent", percent, float(percent_period)),) if percent else ())
    return Rules(float(window), policies, "Max")


@pytest.mark.parametrize("name, lo, hi, up, down, events, current, desired, want", [
    ("prenormalized desired replicas within range", 3, 8, None, None, (), 5, 7, 7),
    ("prenormalized desired replicas < minReplicas", 2, 8, None, None, (), 3, 1, 2),
    ("prenormalized desired replicas within range when minReplicas is 0", 0, 10, None, None, (), 1, 0, 0),
    ("maxReplicas is the limit because maxReplicas < scaleUpLimit", 1, 10, None, None, (), 20, 1000, 10),
    ("desired replica count is more than the maximum replica count", 100, 150, None, None, (), 100, 1000, 150),
    ("scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", 1, 2000, (0, 0, 1, 60, 0),
     None, (), 3, 1000, 4),
    ("scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined policies", 3, 2000, None,
     (20, 60, 0, 0, 0), (), 1000, 3, 980),
    ("scaleUp with default behavior", 1, 1000, None, None, (), 10, 50, 20),
    ("scaleUp with pods policy larger than percent policy", 1, 1000, (100, 60, 100, 60, 0), None, (), 10, 500, 110),
    ("scaleUp with percent policy larger than pods policy", 1, 1000, (2, 60, 100, 60, 0), None, (), 10, 500, 20),
    ("scaleUp with pod policy limitation", 1, 1000, (30, 60, 0, 0, 0), None, (), 10, 50, 40),
    ("scaleUp with percent policy limitation", 1, 1000, (0, 0, 200, 60, 0), None, (), 10, 50, 30),
    ("scaleDown with percent policy larger than pod policy", 1, 1000, None, (20, 60, 1, 60, 300), (), 100, 2, 80),
    ("scaleDown with pod policy larger than percent policy", 1, 1000, None, (2, 60, 1, 60, 300), (), 100, 2, 98),
    ("scaleDown with spec MinReplicas limitation with large percent policy", 5, 1000, None, (0, 0, 100, 60, 300),
     (), 10, 2, 5),
    ("scaleDown with pod policy limitation", 1, 1000, None, (5, 60, 0, 0, 300), (), 10, 2, 5),
    ("scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events",
     1, 1000, (5, 120, 0, 0, 0), None, (1, 5, 9), 100, 500, 100),
    ("scaleUp with pod policy and previous scale up events", 1, 1000, (150, 120, 0, 0, 0), None, (1, 5, 9), 100,
     500, 235),
])
def test_scaling_with_rules(name, lo, hi, up, down, events, current, desired, want):
    """horizontal_test.go TestScalingWithRules. Scale-up events as generateEventsUniformDistribution([1, 5, 9], 120)
    places them: 100, 60 and 20 s ago."""
    spec = HpaSpec(min_replicas=lo, max_replicas=hi,
                   scale_up=generate_scaling_rules(*up) if up else DEFAULT_UP,
                   scale_down=generate_scaling_rules(*down) if down else DEFAULT_DOWN)
    c = HpaCalculator(spec)
    now = 1000.0
    c.events = [(now - age, n) for n, age in zip(events, (100.0, 60.0, 20.0))]
    assert c.decide(now, current, desired) == want, name

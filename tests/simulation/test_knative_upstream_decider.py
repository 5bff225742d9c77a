"""The KPA decider and its inputs against knative/serving's own tests (Knative 1.23), the cases not already in
test_kpa.py:
- `pkg/autoscaler/scaling/autoscaler_test.go` on `KpaDecider` (test helpers as upstream's
  newTestAutoscalerWithScalingMetric: TotalValue = target / 0.75, panic threshold 2, rates 10, 60 s window,
  one Ready pod, two to start in panic);
- `pkg/autoscaler/metrics/sample_size_test.go` on `sampling.sample_size`;
- `pkg/reconciler/autoscaling/resources/target_test.go` TestResolveMetricTarget and `metric_test.go`
  TestMakeMetric / TestStableWindow on `config.from_annotations` (target, total, stable and panic windows),
  with those tests' config-autoscaler (CC target fraction 1.0, default 100, RPS default 200).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from simulation.autoscaler.cluster_config import DEFAULT
from simulation.autoscaler.config import from_annotations
from simulation.autoscaler.kpa import DeciderSpec, KpaDecider
from simulation.autoscaler.sampling import sample_size

TU = 0.75   # autoscaler_test.go targetUtilization


def _decider(target: float, tbc: float, start_in_panic: bool = False, **spec) -> KpaDecider:
    """newTestAutoscalerWithScalingMetric(target, tbc, …): ready pods 1, or 2 to start in panic."""
    return KpaDecider(DeciderSpec(target_value=target, total_value=target / TU, target_burst_capacity=tbc,
                                  panic_threshold=2.0, max_scale_up_rate=10, max_scale_down_rate=10,
                                  stable_window_s=60.0, **spec),
                      ready_pods=2 if start_in_panic else 1, now=0.0)


def _ebc(total_cap: float, tbc: float, concurrency: float, pods: float) -> int:
    """autoscaler_test.go expectedEBC (expectScale allows ±1; the decider computes the same floor exactly)."""
    return math.floor(total_cap / TU * pods - tbc - concurrency)


def test_activation_scale():
    """TestAutoscalerActivationScale: activation-scale 2, no load → 0; stable concurrency 1 → 2."""
    d = _decider(10, 75, activation_scale=2)
    assert tuple(d.scale(0.0, 1, 0.0, 0.0)) == (0, _ebc(10, 75, 0, 1), True)
    assert tuple(d.scale(0.0, 1, 1.0, 0.0)) == (2, _ebc(10, 75, 0, 1), True)


def test_stable_mode_increase_with_rps():
    """TestAutoscalerStableModeIncreaseWithRPS (the decider reads rps as it reads concurrency): 50 → 5, then
    stable 100 / panic 99 → 10."""
    d = _decider(10, 101)
    assert tuple(d.scale(0.0, 1, 50.0, 50.0)) == (5, _ebc(10, 101, 50, 1), True)
    assert tuple(d.scale(0.0, 1, 100.0, 99.0)) == (10, _ebc(10, 101, 99, 1), True)


def test_stable_mode_increase_with_concurrency_default():
    """TestAutoscalerStableModeIncreaseWithConcurrencyDefault: 50 → 5, then stable 100 → 10 (panic 10)."""
    d = _decider(10, 101)
    assert tuple(d.scale(0.0, 1, 50.0, 10.0)) == (5, _ebc(10, 101, 10, 1), True)
    assert tuple(d.scale(0.0, 1, 100.0, 10.0)) == (10, _ebc(10, 101, 10, 1), True)


def test_metrics():
    """TestAutoscalerMetrics: a decider created out of panic, stable and panic 50 → 5 (and panic on: 5 / 1 ≥ 2)."""
    d = _decider(10, 100)
    assert not d.in_panic
    assert tuple(d.scale(0.0, 1, 50.0, 50.0)) == (5, _ebc(10, 100, 50, 1), True)
    assert d.in_panic


def test_metrics_with_rps():
    """TestAutoscalerMetricsWithRPS: stable 100, panic 99, 61 s after creation → 10, in panic."""
    d = _decider(10, 100)
    assert tuple(d.scale(61.0, 1, 100.0, 99.0)) == (10, _ebc(10, 100, 99, 1), True)
    assert d.in_panic


def test_start_metrics_in_panic():
    """TestAutoscalerStartMetrics: created with 2 Ready pods (startInPanic) the decider is in panic at once,
    holding both."""
    d = _decider(10, 100, start_in_panic=True)
    assert d.in_panic and d.max_panic_pods == 2


def test_new_fail():
    """TestNewFail: the pod counter fails (no Ready count): no panic, maxPanicPods 0."""
    d = KpaDecider(DeciderSpec(target_value=100, total_value=120, target_burst_capacity=11, panic_threshold=2.2,
                               max_scale_up_rate=10, max_scale_down_rate=10), ready_pods=0, now=0.0)
    assert not d.in_panic and d.max_panic_pods == 0


def test_stable_mode_no_traffic_scale_to_zero():
    """TestAutoscalerStableModeNoTrafficScaleToZero: stable 1 → 1, then stable 0 → 0."""
    d = _decider(10, 75)
    assert tuple(d.scale(0.0, 1, 1.0, 0.0)) == (1, _ebc(10, 75, 0, 1), True)
    assert tuple(d.scale(0.0, 1, 0.0, 0.0)) == (0, _ebc(10, 75, 0, 1), True)


def test_no_data_at_zero_with_explicit_endpoints():
    """AutoscalerNoDataAtZeroNoAutoscaleWithExplicitEPs: no load at one Ready pod → 0, valid."""
    assert tuple(_decider(10, 100).scale(0.0, 1, 0.0, 0.0)) == (0, _ebc(10, 100, 0, 1), True)


@pytest.mark.parametrize("pop, want", [(0, 0), (1, 1), (2, 2), (5, 4), (10, 7), (100, 14), (1000, 16)])
def test_population_mean_sample_size(pop, want):
    """sample_size_test.go TestPopulationMeanSampleSize."""
    assert sample_size(pop) == want


# -- target_test.go TestResolveMetricTarget ---------------------------------------------------------------------

TARGET_CONFIG = replace(DEFAULT, container_concurrency_target_fraction=1.0, container_concurrency_target_default=100.0,
                        rps_target_default=200.0)
A = "autoscaling.knative.dev/"

RESOLVE = [   # (name, containerConcurrency, annotations, config-autoscaler changes, wantTarget, wantTotal)
    ("defaults", 0, {}, {}, 100, 100),
    ("default CC + 80% TU", 0, {}, {"container_concurrency_target_fraction": 0.8}, 80, 100),
    ("non-default CC and TU", 0, {}, {"container_concurrency_target_fraction": 0.3,
                                      "container_concurrency_target_default": 2}, 0.6, 2),
    ("with container concurrency 12 and TU=80%, but TU annotation 75%", 12, {"target-utilization-percentage": "75"},
     {"container_concurrency_target_fraction": 0.8}, 9, 12),
    ("with container concurrency 10 and TU=80%", 10, {}, {"container_concurrency_target_fraction": 0.8}, 8, 10),
    ("with container concurrency 1 and TU=80%", 1, {}, {"container_concurrency_target_fraction": 0.8}, 0.8, 1),
    ("with container concurrency 1", 1, {}, {}, 1, 1),
    ("with container concurrency 10", 10, {}, {}, 10, 10),
    ("with target annotation 1", 0, {"target": "1"}, {}, 1, 1),
    ("with target annotation 1 and TU=0.1%", 0, {"target": "1"}, {"container_concurrency_target_fraction": 0.001},
     0.01, 1),                                                  # autoscaling.TargetMin
    ("with target annotation 1 and TU=75%", 0, {"target": "1"}, {"container_concurrency_target_fraction": 0.75},
     0.75, 1),
    ("with target annotation 10 and TU=75%", 0, {"target": "10"}, {"container_concurrency_target_fraction": 0.75},
     7.5, 10),
    ("with container concurrency greater than target annotation (ok)", 10, {"target": "1"}, {}, 1, 1),
    ("with target annotation greater than default (ok)", 0, {"target": "500"}, {}, 500, 500),
    ("with target annotation greater than container concurrency (ignore annotation for safety)", 1,
     {"target": "10"}, {}, 1, 1),
    ("RPS: defaults", 1, {"metric": "rps"}, {}, 140, 200),
    ("RPS: with target annotation 1", 0, {"metric": "rps", "target": "1"}, {}, 0.7, 1),
    ("RPS: with TU annotation 75%", 0, {"metric": "rps", "target-utilization-percentage": "75"}, {}, 150, 200),
    ("RPS: with target annotation greater than default", 0, {"metric": "rps", "target": "300"}, {}, 210, 300),
]


def _from(cc: int, annotations: dict, **cluster):
    problems: list = []
    cfg = from_annotations({A + k: v for k, v in annotations.items()}, cc, problems,
                           cluster=replace(TARGET_CONFIG, **cluster))
    assert not problems
    return cfg


@pytest.mark.parametrize("name, cc, ann, cluster, want_target, want_total", RESOLVE, ids=[r[0] for r in RESOLVE])
def test_resolve_metric_target(name, cc, ann, cluster, want_target, want_total):
    """ResolveMetricTarget compares the floats exactly; so does this (the same products in the same order)."""
    cfg = _from(cc, ann, **cluster)
    assert (cfg.target_value, cfg.total_value) == (want_target, want_total)


MAKE_METRIC = [   # metric_test.go TestMakeMetric: (name, annotations, stable window, panic window)
    ("defaults", {}, 60.0, 6.0),
    ("with too short panic window", {"window": "10s", "panic-window-percentage": "10"}, 10.0, 1.0),   # BucketSize
    ("with longer stable window, no panic window percentage, defaults to 10%", {"window": "10m"}, 600.0, 60.0),
    ("with longer panic window percentage", {"panic-window-percentage": "50"}, 60.0, 30.0),
    ("with panic window percentage+rounding", {"panic-window-percentage": "51"}, 60.0, 31.0),
    # the panic window as MakeMetric rounds it (Duration.Round: halves away from zero)
    ("61s at 10% rounds down to 6s", {"window": "61s"}, 61.0, 6.0),
    ("65s at 10% rounds half up to 7s", {"window": "65s"}, 65.0, 7.0),
    ("6s at 1% is the 1s minimum", {"window": "6s", "panic-window-percentage": "1"}, 6.0, 1.0),
    ("TestStableWindow: 251s", {"window": "251s"}, 251.0, 25.0),
]


@pytest.mark.parametrize("name, ann, stable, panic", MAKE_METRIC, ids=[r[0] for r in MAKE_METRIC])
def test_make_metric_windows(name, ann, stable, panic):
    cfg = _from(0, ann)
    assert (cfg.stable_window_s, cfg.panic_window_s) == (stable, panic)

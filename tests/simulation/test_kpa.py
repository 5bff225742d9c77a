"""The KPA decider against knative/serving `pkg/autoscaler/scaling/autoscaler_test.go: TestAutoscalerScale`.

Harness as `newTestAutoscalerWithScalingMetric`: TotalValue = target / 0.75, panic threshold 2, max scale up/down
rate 10, stable window 60 s, reachable; EBC compared with ±1 (`approxEquateInt32`).
"""

from __future__ import annotations

import math

import pytest

from validation.errors import Problem
from simulation.autoscaler.aggregation import MaxWindow, WindowBuckets
from simulation.autoscaler.config import AutoscalerConfig, from_annotations, parse_duration
from simulation.autoscaler.kpa import DeciderSpec, KpaDecider


def decider(target: float, tbc: float, *, msur: float = 10.0, msdr: float = 10.0, reachable: bool = True,
            delay: float = 0.0, activation: int = 1) -> KpaDecider:
    return KpaDecider(DeciderSpec(target_value=target, total_value=target / 0.75, target_burst_capacity=tbc,
                                  panic_threshold=2.0, max_scale_up_rate=msur, max_scale_down_rate=msdr,
                                  stable_window_s=60.0, scale_down_delay_s=delay, activation_scale=activation,
                                  reachable=reachable))


def in_panic(max_pods: int):
    def prep(d: KpaDecider) -> None:
        d.panic_time = 0.0
        d.max_panic_pods = max_pods
    return prep


CASES = [
    pytest.param(10, 100, 1, 0, 0, {}, None, 0, -87, id="AutoscalerNoDataAtZeroNoAutoscale"),
    pytest.param(181, -1, 1, 21, 26, {}, None, 1, -1, id="AutoscalerStableModeUnlimitedTBC"),
    pytest.param(10, 0, 1, 50, 49, {}, None, 5, 0, id="Autoscaler0TBC"),
    pytest.param(10, 100, 1, 50, 50, {}, None, 5, -137, id="AutoscalerStableModeNoChange"),
    pytest.param(1, 100, 5, 50, 30, {}, in_panic(5), 50, -124, id="AutoscalerPanicStableLargerThanPanic"),
    pytest.param(1, 100, 5, 20, 30, {}, in_panic(5), 30, -124, id="AutoscalerPanicStableLessThanPanic"),
    pytest.param(10, 100, 5, 50, 50, {}, None, 5, -84, id="AutoscalerStableModeNoChangeAlreadyScaled"),
    pytest.param(1, 1982, 2, 3, 3.1, {"msur": 1.1}, None, 3, -1983,
                 id="AutoscalerStableModeIncreaseWithSmallScaleUpRate"),
    pytest.param(10, 1982, 100, 1, 1, {"msdr": 1.1}, None, 90, -650,
                 id="AutoscalerStableModeDecreaseWithSmallScaleDownRate"),
    pytest.param(10, 1982, 100, 1, 1, {"msdr": 1.1, "reachable": False}, None, 1, None,
                 id="AutoscalerStableModeDecreaseNonReachable"),
    pytest.param(10, 84, 1, 50, 100, {}, None, 10, -171, id="AutoscalerPanicModeDoublePodCount"),
]


@pytest.mark.parametrize("target,tbc,ready,stable,panic,extra,prep,want,want_ebc", CASES)
def test_autoscaler_scale(target, tbc, ready, stable, panic, extra, prep, want, want_ebc):
    d = decider(target, tbc, **extra)
    if prep:
        prep(d)
    r = d.scale(10.0, ready, stable, panic)
    assert r.valid
    assert r.desired == want
    if want_ebc is not None:
        assert abs(r.excess_burst_capacity - want_ebc) <= 1


def expect_scale(d: KpaDecider, now: float, ready: int, stable: float, panic: float, want: int) -> None:
    r = d.scale(now, ready, stable, panic)
    assert r.desired == want, f"t={now}: desired {r.desired}, want {want}"


def test_scale_down_delay_holds_the_max():
    # like TestAutoscalerScaleDownDelay: a 5 s delay keeps the highest recent desired scale
    d = decider(10, 0, delay=5.0)
    expect_scale(d, 0.0, 5, 50, 50, 5)
    expect_scale(d, 2.0, 5, 0, 0, 5)
    expect_scale(d, 4.0, 5, 0, 0, 5)
    expect_scale(d, 6.0, 5, 0, 0, 0)


def test_panic_holds_for_a_stable_window_after_last_over_threshold_tick():
    d = decider(10, 100)
    expect_scale(d, 0.0, 1, 10, 40, 4)           # dppc 4 / 1 ready ≥ 2 → panic, max(1, 4)
    assert d.in_panic
    for t in range(2, 61, 2):                     # load gone, still in panic: never scale down
        expect_scale(d, float(t), 4, 0, 0, 4)
    expect_scale(d, 62.0, 4, 0, 0, 0)             # 62 > 0 + 60 → leave panic; maxDown = floor(4/10) = 0
    assert not d.in_panic


def test_new_decider_with_ready_pods_starts_in_panic():
    d = KpaDecider(DeciderSpec(target_value=1, total_value=1), ready_pods=3, now=0.0)
    assert d.in_panic and d.max_panic_pods == 3


def test_activation_scale():
    d = decider(10, 100, activation=3)
    expect_scale(d, 0.0, 1, 1, 1, 3)


# -- autoscaler_test.go's step-by-step tests, named after them: (t, ready, stable, panic) -> desired, EBC as the
# test's expectedEBC, and the panic time where the test checks it (None: out of panic; ANY: not checked).
ANY = object()


def expected_ebc(target: float, tbc: float, panic: float, ready: int) -> int:
    return math.floor(target / 0.75 * ready - tbc - panic)


STEPS = [
    pytest.param(10, 101, [(0, 1, 50, 10, 5, ANY), (0, 1, 100, 10, 10, ANY)],
                 id="AutoscalerStableModeIncreaseWithConcurrencyDefault"),
    pytest.param(1, 98, [(0, 10, 11, 25, 25, 0), (30, 40, 30, 41, 41, 0), (62, 55, 50, 56, 50, None)],
                 id="AutoscalerUnpanicAfterSlowIncrease"),
    pytest.param(1, 98, [(0, 10, 11, 25, 25, 0), (30, 40, 30, 80, 80, 30)], id="AutoscalerExtendPanicWindow"),
    pytest.param(10, 98, [(0, 8, 100, 100, 10, ANY), (0, 8, 50, 50, 5, ANY)], id="AutoscalerStableModeDecrease"),
    pytest.param(10, 75, [(0, 1, 1, 0, 1, ANY), (0, 1, 0, 0, 0, ANY)], id="AutoscalerStableModeNoTrafficScaleToZero"),
    pytest.param(1, 101, [(0, 1, 6, 6, 6, ANY), (0, 6, 36, 36, 36, 0), (1, 36, 216, 216, 216, 1),
                          (1, 216, 1296, 1296, 1296, 1), (2, 1296, 1296, 1296, 1296, ANY)],
                 id="AutoscalerPanicModeExponentialTrackAndStabilize"),
    pytest.param(10, 93, [(0, 1, 100, 100, 10, ANY), (0, 10, 100, 1000, 100, 0), (30, 10, 1, 1, 100, 0),
                          (61, 10, 1, 1, 1, None)], id="AutoscalerPanicThenUnPanicScaleDown"),
    pytest.param(10, 61, [(0, 1, 1000, 1001, 10, ANY), (0, 10, 1000, 1001, 100, ANY)],
                 id="AutoscalerRateLimitScaleUp"),
    pytest.param(10, 61, [(0, 100, 1, 1, 10, ANY), (0, 10, 1, 1, 1, ANY)], id="AutoscalerRateLimitScaleDown"),
    pytest.param(10, 81, [(0, 0, 1000, 888, 10, ANY)], id="AutoscalerUseOnePodAsMinimumIfEndpointsNotFound"),
]


@pytest.mark.parametrize("target,tbc,steps", STEPS)
def test_autoscaler_steps(target, tbc, steps):
    d = decider(target, tbc)
    for now, ready, stable, panic, want, panic_time in steps:
        r = d.scale(float(now), ready, stable, panic)
        assert r.desired == want, f"t={now}: desired {r.desired}, want {want}"
        assert abs(r.excess_burst_capacity - expected_ebc(target, tbc, panic, ready)) <= 1
        if panic_time is not ANY:
            assert d.panic_time == panic_time, f"t={now}"


def test_autoscaler_update_target():
    """TestAutoscalerUpdateTarget: the new spec's target and TBC apply from the next Scale."""
    d = decider(10, 77)
    assert d.scale(0.0, 1, 100, 101) == (10, expected_ebc(10, 77, 101, 1), True)
    d.update(DeciderSpec(target_value=1, total_value=1 / 0.75, target_burst_capacity=71, panic_threshold=2.0,
                         max_scale_up_rate=10, max_scale_down_rate=10, stable_window_s=60.0))
    r = d.scale(0.0, 10, 100, 101)
    assert r.desired == 100 and abs(r.excess_burst_capacity - expected_ebc(1, 71, 101, 10)) <= 1


def delay_decider(delay: float) -> KpaDecider:
    """The scale-down-delay tests' spec: target 10, no TBC, panic threshold 100 (never), rates 10."""
    return KpaDecider(DeciderSpec(target_value=10, total_value=10, target_burst_capacity=0, panic_threshold=100,
                                  max_scale_up_rate=10, max_scale_down_rate=10, stable_window_s=60.0,
                                  scale_down_delay_s=delay, reachable=True))


def test_autoscaler_scale_down_delay():
    """TestAutoscalerScaleDownDelay, 5 min: "simple" then "gradual" on the same decider."""
    d = delay_decider(300.0)
    for now, load, want in [(2, 40, 4), (300, 0, 4), (302, 0, 0),                       # simple
                            (540, 40, 4), (600, 30, 4), (660, 0, 4), (840, 0, 3), (900, 0, 0)]:   # gradual
        expect_scale(d, float(now), 0, load, load, want)


def test_autoscaler_scale_down_delay_not_reachable():
    """TestAutoscalerScaleDownDelayNotReachable: once Update marks the revision unreachable the delay is dropped."""
    from dataclasses import replace
    d = delay_decider(300.0)
    expect_scale(d, 2.0, 0, 40, 40, 4)
    expect_scale(d, 60.0, 0, 0, 0, 4)
    d.update(replace(d.spec, reachable=False))
    expect_scale(d, 2.0, 0, 0, 0, 0)


def test_autoscaler_scale_down_delay_zero():
    """TestAutoscalerScaleDownDelayZero: no window, so a second Scale in the same interval scales down at once."""
    d = delay_decider(0.0)
    assert d.delay_window is None
    expect_scale(d, 0.0, 0, 40, 40, 4)
    expect_scale(d, 0.5, 0, 20, 20, 2)


@pytest.mark.parametrize("ready, panics", [(0, False), (1, False), (2, True)])
def test_start_in_panic_mode(ready, panics):
    """TestStartInPanicMode: made with more than one Ready pod, the decider starts in panic holding them. (Knative
    also sets maxPanicPods to 0 or 1 out of panic; unread until a panic begins, where the desired scale is >= 1.)"""
    d = KpaDecider(DeciderSpec(target_value=100, total_value=120, target_burst_capacity=11, panic_threshold=2.2,
                               max_scale_up_rate=10, max_scale_down_rate=10), ready_pods=ready, now=5.0)
    assert d.in_panic is panics and d.panic_time == (5.0 if panics else None)
    if panics:
        assert d.max_panic_pods == ready


def test_window_buckets_partial_and_gap():
    b = WindowBuckets(60.0)
    b.record(0.2, 10.0)
    b.record(1.5, 20.0)
    assert b.window_average(1.9) == pytest.approx(15.0)   # two buckets so far
    assert b.window_average(3.0) == pytest.approx(15.0)   # seconds after the last write are left out
    b.record(3.0, 0.0)
    assert b.window_average(3.0) == pytest.approx(30.0 / 4)  # gaps between writes count as zero
    assert b.window_average(200.0) == 0.0
    b.record(300.0, 6.0)                                       # after a whole-window gap: starts over
    assert b.window_average(300.0) == pytest.approx(6.0)


def test_window_average_leaves_out_stale_seconds():
    # bucketing.go WindowAverage, case d < window: "if the window is 60 seconds but we last received data 10
    # seconds ago, the window average will be the average over the first 50 seconds".
    b = WindowBuckets(60.0)
    for t in range(60):
        b.record(float(t), 1.0)
    assert b.window_average(69.0) == pytest.approx(1.0)
    # The 2 s decider tick fires before that second's scrape: the panic average must not read 5/6 of the load.
    p = WindowBuckets(6.0)
    for t in range(1, 10):
        p.record(float(t), 6.0)
    assert p.window_average(10.0) == pytest.approx(6.0)


def test_max_window():
    m = MaxWindow(6.0)
    m.record(0.0, 5)
    m.record(2.0, 1)
    assert m.current() == 5
    m.record(6.0, 1)
    assert m.current() == 1


def test_config_defaults_are_knatives():
    c = AutoscalerConfig()
    assert (c.target_utilization, c.target_burst_capacity, c.stable_window_s, c.panic_window_s) == (0.7, 211, 60, 6)
    assert (c.panic_threshold, c.max_scale_up_rate, c.max_scale_down_rate) == (2.0, 1000, 2)
    assert c.total_value == 100 and c.target_value == pytest.approx(70)
    cc1 = AutoscalerConfig(container_concurrency=1)
    assert cc1.target_value == pytest.approx(0.7)


def test_kpa_buckets_are_whole_seconds_and_no_user_setting_changes_that():
    """The KPA loop adds scrape k to bucket k (whole seconds): a config with other buckets is refused where it is
    built, and no annotation reaches `bucket_s` (an unknown one is a Problem naming it, not a traceback)."""
    from dataclasses import replace

    with pytest.raises(ValueError, match="bucket_s"):
        AutoscalerConfig(bucket_s=2.0)
    with pytest.raises(ValueError, match="bucket_s"):
        replace(AutoscalerConfig(), bucket_s=0.5)
    problems: list = []
    c = from_annotations({"autoscaling.knative.dev/bucket": "2s", "autoscaling.knative.dev/window": "10s"}, 1,
                         problems)
    assert c.bucket_s == 1.0 and len(problems) == 1 and "bucket" in problems[0].path


@pytest.mark.parametrize("ann,field,value", [
    ({"autoscaling.knative.dev/window": "2m"}, "stable_window_s", 120.0),
    ({"autoscaling.knative.dev/target-burst-capacity": "0"}, "target_burst_capacity", 0.0),
    ({"autoscaling.knative.dev/panic-threshold-percentage": "110"}, "panic_threshold_percentage", 110.0),
    ({"autoscaling.knative.dev/scale-down-delay": "30s"}, "scale_down_delay_s", 30.0),
    ({"autoscaling.knative.dev/minScale": "2"}, "min_scale", 2),
], ids=["window", "tbc-zero", "panic-min", "scale-down-delay", "legacy-camelcase"])
def test_config_from_annotations(ann, field, value):
    problems: list[Problem] = []
    c = from_annotations(ann, 1, problems)
    assert not problems
    assert getattr(c, field) == value


@pytest.mark.parametrize("ann", [
    {"autoscaling.knative.dev/window": "5s"},
    {"autoscaling.knative.dev/panic-threshold-percentage": "100"},
    {"autoscaling.knative.dev/target": "lots"},
    {"autoscaling.knative.dev/windw": "60s"},
], ids=["window-too-short", "panic-below-110", "target-not-a-number", "typo"])
def test_config_malformed(ann):
    problems: list[Problem] = []
    from_annotations(ann, 1, problems)
    assert len(problems) == 1 and list(ann)[0] in problems[0].path


def test_parse_duration():
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("abc") is None

"""Per-direction HPA tolerance (KEP-4951, HPAConfigurableTolerance; review rev12 F4).

Kubernetes `horizontal.go: tolerancesForHpa` takes `behavior.scaleUp.tolerance` / `scaleDown.tolerance` (each
unset one the controller's 0.1) and `replica_calculator.go: Tolerances.isWithin` keeps the current replicas while
1 − scaleDown ≤ usage ratio ≤ 1 + scaleUp. The gate is beta and on by default from Kubernetes 1.35; 1.33 and 1.34
have it alpha and off, 1.32 has no field. Before, the stack rendered the field and the simulation scaled at 0.1
both ways. Rows use target 1 (a metric sum is pods' worth) and tolerances binary floating point holds exactly."""

from __future__ import annotations

import pytest

from simulation.autoscaler.hpa import (DEFAULT_DOWN, DEFAULT_UP, HpaCalculator, HpaSpec, Rules, behavior_rules,
                                       rules_from_manifest, tolerance_value)
from simulation.scenario import load_scenario
from stackconfig.schema import parse_stack_config
from validation.errors import InputError, Problem

from gate import scenario_for
from tests.runtime_stack import chat_stack, refused

UP_HALF_DOWN_EIGHTH = {"scaleUp": {"tolerance": "0.5"}, "scaleDown": {"tolerance": "125m"}}


def calc(behavior: dict | None = None) -> HpaCalculator:
    up, down = behavior_rules(behavior, "behavior", problems := [])
    assert problems == []
    return HpaCalculator(HpaSpec(min_replicas=1, max_replicas=100, metric="concurrency", target=1.0,
                                 scale_up=up, scale_down=down))


@pytest.mark.parametrize("value, seconds", [("0.05", 0.05), ("50m", 0.05), ("5e-2", 0.05), (0.05, 0.05), (1, 1.0),
                                            ("0", 0.0), ("+.5", 0.5), ("10", 10.0), ("2E+1", 20.0)])
def test_a_tolerance_is_read_as_the_quantity_it_is(value, seconds):
    assert tolerance_value(value) == pytest.approx(seconds)
    rules = rules_from_manifest({"tolerance": value}, DEFAULT_UP, "up", problems := [])
    assert problems == [] and rules == Rules(DEFAULT_UP.window_s, DEFAULT_UP.policies, "Max", tolerance_value(value))


@pytest.mark.parametrize("value", ["-0.1", "-1m", "abc", "0.1 ", "1e1.5", True, [0.1], float("nan"), "1e99999999"])
def test_what_is_no_quantity_or_negative_is_refused(value):
    """validation.go: "must be greater or equal to zero"; the rest is no resource.Quantity."""
    rules = rules_from_manifest({"tolerance": value}, DEFAULT_DOWN, "down", problems := [])
    assert [p.path for p in problems] == ["down.tolerance"] and rules == DEFAULT_DOWN


def test_unset_is_the_controllers_tolerance_both_ways():
    c = calc()
    assert DEFAULT_UP.tolerance is None and DEFAULT_DOWN.tolerance is None
    assert c.replicas_for_metric(8, 8, 0, 8.4) == 8        # ratio 1.05: kept
    assert c.replicas_for_metric(8, 8, 0, 9.2) == 10       # 1.15: out
    assert c.replicas_for_metric(8, 8, 0, 7.6) == 8        # 0.95: kept
    assert c.replicas_for_metric(8, 8, 0, 6.8) == 7        # 0.85: out


def test_each_direction_keeps_its_own_tolerance():
    c = calc(UP_HALF_DOWN_EIGHTH)
    assert c.replicas_for_metric(8, 8, 0, 11.6) == 8       # ratio 1.45: inside scale-up's 0.5 (0.1 would scale)
    assert c.replicas_for_metric(8, 8, 0, 12.4) == 13      # 1.55: out
    assert c.replicas_for_metric(8, 8, 0, 7.0) == 8        # 0.875 = 1 − 0.125: kept
    assert c.replicas_for_metric(8, 8, 0, 6.8) == 7        # 0.85: out
    only_down = calc({"scaleDown": {"tolerance": "0.25"}})
    assert only_down.replicas_for_metric(8, 8, 0, 9.2) == 10   # scale-up keeps the controller's 0.1
    assert only_down.replicas_for_metric(8, 8, 0, 6.4) == 8    # 0.8: inside scale-down's 0.25


def test_a_zero_tolerance_acts_on_any_difference():
    c = calc({"scaleUp": {"tolerance": 0}})
    assert c.replicas_for_metric(8, 8, 0, 8.4) == 9        # ratio 1.05: the default would keep 8
    assert c.replicas_for_metric(8, 8, 0, 8.0) == 8        # exactly on target


def test_the_rebalanced_ratio_with_unready_pods_uses_the_scale_up_tolerance():
    """GetResourceReplicas / calcPlainMetricReplicas: unready pods at 0, the new ratio checked with isWithin."""
    c = calc(UP_HALF_DOWN_EIGHTH)
    assert c.replicas_for_metric(4, 2, 2, 5.6) == 4        # 2.8 over 2 ready; 1.4 over 4: inside 0.5, keep
    assert calc().replicas_for_metric(4, 2, 2, 5.6) == 6   # the default 0.1: ceil(1.4 · 4)


def test_a_kedas_external_metric_uses_them_too():
    """GetExternalPerPodMetricReplicas: the total against target × status replicas, then isWithin."""
    c = calc(UP_HALF_DOWN_EIGHTH)
    assert c.replicas_for_external(4, 5.6) == 4            # 1.4: inside 0.5
    assert c.replicas_for_external(8, 7.0) == 8            # 0.875: inside 0.125
    assert c.replicas_for_external(8, 6.8) == 7            # 0.85: out, ceil(6.8)
    assert calc().replicas_for_external(4, 5.6) == 6       # the default 0.1 both ways
    assert calc().replicas_for_external(8, 7.0) == 7


def _stack(version: str, **hpa) -> dict:
    kw = {"scaleMetric": "cpu", "scaleTarget": 50} if hpa.get("scaler") != "keda" else {"scaleMetric": "concurrency"}
    cfg = chat_stack(deploymentMode="Standard", minReplicas=1, maxReplicas=4,
                     hpa={"behavior": UP_HALF_DOWN_EIGHTH, **hpa}, **kw)
    cfg["cluster"]["kubernetesVersion"] = version
    return cfg


@pytest.mark.parametrize("scaler", ["hpa", "keda"])
@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_the_stacks_tolerance_reaches_the_simulated_hpa(scaler, version):
    cfg = parse_stack_config(_stack(version, scaler=scaler), "p", "dev")
    spec = load_scenario(scenario_for(cfg, cfg.services[0])).serving.hpa
    assert (spec.keda is not None) == (scaler == "keda")
    assert (spec.scale_up.tolerance, spec.scale_down.tolerance) == (0.5, 0.125)


@pytest.mark.parametrize("scaler", ["hpa", "keda"])
@pytest.mark.parametrize("version", ["1.32", "1.33", "1.34"])
def test_below_1_35_a_tolerance_is_refused(scaler, version):
    text = refused(_stack(version, scaler=scaler))
    for key in ("scaleUp", "scaleDown"):
        assert f"p:services[0].hpa.behavior.{key}.tolerance" in text
    assert "HPAConfigurableTolerance" in text and f"Kubernetes {version}" in text
    assert "Additional properties" not in text   # 1.32's schema has no field: one problem, ours, per direction


def test_a_stacks_bad_tolerance_is_refused_at_load():
    cfg = _stack("1.36")
    cfg["services"][0]["hpa"]["behavior"] = {"scaleUp": {"tolerance": "-5%"}}
    with pytest.raises(InputError) as err:
        parse_stack_config(cfg, "p", "dev")
    assert [p.path for p in err.value.problems] == ["p:services[0].hpa.behavior.scaleUp.tolerance"]
    assert isinstance(err.value.problems[0], Problem)

"""Boundary tests for the HPA calculator: what a mutmut run of simulation/autoscaler/hpa.py (2026-12-02) showed no
test would notice. Rows follow kubernetes `pkg/controller/podautoscaler/replica_calculator.go` and `horizontal.go`
(target 1, so a metric sum is a number of pods' worth; tolerance 0.25 where a row sits exactly on it, a value
binary floating point holds exactly).
"""

from __future__ import annotations

import pytest

from simulation.autoscaler.hpa import DEFAULT_DOWN, DEFAULT_UP, HpaCalculator, HpaSpec, Policy, Rules, behavior_rules
from validation.errors import Problem


def calc(tolerance: float = 0.1, up: Rules = DEFAULT_UP, down: Rules = DEFAULT_DOWN, lo: int = 1,
         hi: int = 1000) -> HpaCalculator:
    return HpaCalculator(HpaSpec(min_replicas=lo, max_replicas=hi, metric="concurrency", target=1.0,
                                 tolerance=tolerance, scale_up=up, scale_down=down))


@pytest.mark.parametrize("current, ready, unready, metric_sum, tolerance, want", [
    (3, 0, 2, 5.0, 0.1, 3),        # no ready pod: keep (no ratio to compute)
    (10, 2, 0, 3.0, 0.1, 3),       # all pods ready, ratio 1.5: ceil(1.5 × 2), even below current (no rebalance)
    (3, 2, 1, 3.2, 0.1, 3),        # ratio 1.6, but with the unready pod at 0 it is 1.07: within tolerance, keep
    (5, 2, 3, 2.0, 0.1, 5),        # ratio exactly 1 with unready pods: within tolerance (not the rebalance path)
    (4, 4, 0, 5.0, 0.25, 4),       # ratio 1.25 = 1 + tolerance: within it (<=)
    (4, 2, 2, 5.0, 0.25, 4),       # rebalanced ratio 1.25 = 1 + tolerance: within it, keep
])
def test_replicas_for_metric_boundaries(current, ready, unready, metric_sum, tolerance, want):
    assert calc(tolerance).replicas_for_metric(current, ready, unready, metric_sum) == want


@pytest.mark.parametrize("status, usage, tolerance, want", [
    (1, 1.05, 0.1, 1),             # one pod, within tolerance: keep
    (4, 5.0, 0.25, 4),             # 5 / (1 × 4) = 1.25: on the tolerance, keep
    (4, 5.5, 0.25, 6),             # beyond it: ceil(total / target)
])
def test_replicas_for_external_boundaries(status, usage, tolerance, want):
    assert calc(tolerance).replicas_for_external(status, usage) == want


def test_scale_up_stabilization_window_holds_the_lowest_recent_recommendation():
    """stabilizeRecommendationWithBehaviors: with a 60 s scale-up window, an 8 after a 2 stays at 2."""
    c = calc(up=Rules(60.0, DEFAULT_UP.policies, "Max"))
    assert c.decide(0.0, 2, 2) == 2
    assert c.decide(15.0, 2, 8) == 2
    assert c.decide(75.0, 2, 8) == 6               # the 2 has left the window: up, rate-limited to 2 + 4


def test_a_policy_counts_the_changes_of_its_own_period():
    """getReplicasChangePerPeriod over a 60 s Pods-4 policy: +4 at t = 0 uses the whole allowance until t = 60."""
    c = calc(up=Rules(0.0, (Policy("Pods", 4, 60.0),), "Max"))
    assert [c.decide(t, cur, 20) for t, cur in ((0.0, 2), (15.0, 6), (30.0, 6), (60.0, 6))] == [6, 6, 6, 10]


def test_the_default_policies_forget_a_change_exactly_one_period_old():
    """A change exactly 15 s ago is outside the period (`timestamp + period` must be after now)."""
    c = calc()
    assert c.decide(0.0, 2, 20) == 6               # max(Pods 4 → 6, Percent 100 → 4)
    assert c.decide(15.0, 6, 20) == 12             # period start 6: max(10, 12)


def test_a_scale_down_exactly_one_period_old_is_forgotten_too():
    c = calc(down=Rules(0.0, (Policy("Percent", 50, 15.0),), "Max"))
    assert c.decide(0.0, 10, 1) == 5
    assert c.decide(15.0, 5, 1) == 2               # period start 5 (not 10): int(5 × 0.5)


def test_a_change_of_one_pod_counts_against_the_period():
    c = calc(up=Rules(0.0, (Policy("Pods", 1, 60.0),), "Max"))
    assert c.decide(0.0, 2, 20) == 3
    assert c.decide(15.0, 3, 20) == 3              # the +1 of t = 0 used the period's allowance


def test_percent_policies_round_up_going_up_and_down_going_down():
    up = calc(up=Rules(0.0, (Policy("Percent", 100, 15.0),), "Max"))
    assert up.decide(0.0, 101, 1000) == 202        # ceil(101 × 2)
    down = calc(down=Rules(0.0, (Policy("Percent", 50, 15.0),), "Max"))
    assert down.decide(0.0, 10, 1) == 5            # int(10 × 0.5)
    all_of_it = calc(down=Rules(0.0, (Policy("Percent", 100, 15.0),), "Max"), lo=0)
    assert all_of_it.decide(0.0, 101, 0) == 0      # int(101 × 0)


def test_select_max_going_down_takes_the_most_permissive_limit_and_disabled_never_scales():
    both = Rules(0.0, (Policy("Pods", 1, 15.0), Policy("Percent", 50, 15.0)), "Max")
    assert calc(down=both).decide(0.0, 10, 1) == 5             # min(10 − 1, 10 × 0.5): the lower one
    assert calc(down=Rules(0.0, both.policies, "Min")).decide(0.0, 10, 1) == 9
    assert calc(down=Rules(0.0, both.policies, "Disabled")).decide(0.0, 10, 1) == 10


def test_behavior_that_is_not_a_mapping_is_a_problem_and_the_defaults_apply():
    problems: list[Problem] = []
    assert behavior_rules([1], "hpa.behavior", problems) == (DEFAULT_UP, DEFAULT_DOWN)
    assert problems == [Problem("hpa.behavior", [1], "expected a mapping")]
    problems = []
    behavior_rules({"scaleUp": 5, "scaleDown": "x"}, "b", problems)
    assert [p.path for p in problems] == ["b.scaleUp", "b.scaleDown"]

"""The rollout stress event (simulation/stress.py RolloutDriver) against knative/serving: when the route moves
(kpa.go activeThreshold, revision_lifecycle.go PropagateAutoscalerStatus) and how the old, unreachable revision
scales down (revision/resources/pa.go reachability, autoscaler.go Scale)."""

from __future__ import annotations

import pytest

from simulation import stress
from simulation.fleet import load_fleet, run_fleet

from tests.simulation.test_fleet import _fleet, _svc

SLOW_NODES = {"warm_nodes": 6, "max_nodes": 12, "node_provision_s": {"dist": "uniform", "low": 60, "high": 300}}


@pytest.fixture
def flips(monkeypatch) -> list[dict]:
    """What each RolloutDriver saw when it moved the route, and its new revision's decider when it started."""
    seen: list[dict] = []
    check, start = stress.RolloutDriver._check, stress.RolloutDriver._start

    def spy_start(self):
        start(self)
        d = self.new.autoscaler.decider
        seen.append({"panic_at_start": d.in_panic, "max_panic_pods": d.max_panic_pods})

    def spy_check(self):
        before = self.old.route
        check(self)
        if before is None and self.old.route is not None:
            seen[-1].update(ready=len(self.new.endpoints), t=self.new.env.now,
                            old_reachable=self.old.autoscaler.decider.spec.reachable)

    monkeypatch.setattr(stress.RolloutDriver, "_start", spy_start)
    monkeypatch.setattr(stress.RolloutDriver, "_check", spy_check)
    return seen


def test_the_route_moves_once_min_scale_pods_are_ready_not_initial_scale(flips):
    """minReplicas 3, no initial-scale (1): the PA's activeThreshold is max(min-scale, initial-scale) = 3 until the
    scale target is initialized, so the revision turns Ready — and takes the traffic — with 3 Ready pods. Moving it
    at the first Ready pod sent 1.2 rps of 4 s requests to one pod of CC 2: 503s from its queue-proxy."""
    fleet = _fleet({"scenario": _svc("a", 1.2, min_r=3, max_r=6, cc=2), "rollout": {"at_s": 60}},
                   cluster=SLOW_NODES, duration=900)
    a = run_fleet(load_fleet(fleet), 2)["services"]["a"]
    assert flips[0]["ready"] >= 3
    assert a["rollout"]["ready_s"] == pytest.approx(flips[0]["t"] - 60)
    assert a["status_counts"] == {"200": a["requests"]}


def test_a_new_revision_decider_starts_out_of_panic_a_warm_one_in_panic(flips, scn):
    """autoscaler.go newAutoscaler: panic at creation only with more than one Ready pod; a new revision has none
    (its pods are still starting), a warm start's pods are Ready when its decider is made."""
    from simulation import load_scenario
    from simulation.engine import Sim
    fleet = _fleet({"scenario": _svc("a", 0.5, min_r=3, max_r=3), "rollout": {"at_s": 60}},
                   cluster={"warm_nodes": 6, "max_nodes": 6}, duration=200)
    run_fleet(load_fleet(fleet), 1)
    assert flips[0]["panic_at_start"] is False and flips[0]["max_panic_pods"] == 0
    warm = Sim(load_scenario({"inferenceService": scn.isvc(min_replicas=3, max_replicas=3),
                              "workload": {"kind": "poisson", "rate": 0.5}, "duration_s": 10,
                              "server": {"kind": "simple", "base_s": 1.0}}), 1)
    warm.start()
    assert warm.autoscaler.decider.in_panic and warm.autoscaler.decider.max_panic_pods == 3


def test_the_old_revision_unreachable_drops_its_scale_down_delay(flips):
    """After the route moves the old revision is in the route's reserve: Unreachable, so its decider holds neither
    the 600 s scale-down-delay nor the scale-down rate limit. Its pods go within its 20 s window + the 30 s grace,
    not 600 s later."""
    fleet = _fleet({"scenario": _svc("a", 1.0, min_r=2, max_r=4, **{"autoscaling.knative.dev/scale-down-delay":
                                                                    "600s"}), "rollout": {"at_s": 60}},
                   cluster={"warm_nodes": 4, "max_nodes": 8}, duration=600)
    a = run_fleet(load_fleet(fleet), 1)["services"]["a"]
    flip = 60 + a["rollout"]["ready_s"]
    assert flips[0]["old_reachable"] is False
    series = a["replica_series"]
    last_ready = max(t for t, r in zip(series["t"], series["ready"]) if r > 0)
    assert flip < last_ready < flip + 120 and series["ready"][-1] == 0

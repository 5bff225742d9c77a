"""A rollout with initial-scale above min-scale (simulation/stress.py RolloutDriver): knative/serving kpa.go
activeThreshold is max(min-scale, initial-scale) until the scale target is initialized, so with initial-scale 3 and
min-scale 1 the new revision turns Ready, and the Route moves to it, when its third pod is Ready, not its first.
test_rollout covers min-scale 3 with initial-scale 1 only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulation import stress
from simulation.fleet import load_fleet, run_fleet

from tests.simulation.test_fleet import _fleet, _svc


@pytest.fixture
def timeline(monkeypatch) -> list[tuple[float, int, bool]]:
    """(time, Ready pods of the new revision, route moved) at each readiness change the driver is told of."""
    seen: list = []
    check = stress.RolloutDriver._check

    def spy(self):
        check(self)
        seen.append((self.new.env.now, len(self.new.endpoints), self.old.route is not None))

    monkeypatch.setattr(stress.RolloutDriver, "_check", spy)
    return seen


def _rollout(deadline_s: float | None = None) -> dict:
    svc = _svc("a", 0.5, min_r=1, max_r=6, **{"autoscaling.knative.dev/initial-scale": "3"})
    fleet = load_fleet(_fleet({"scenario": svc, "rollout": {"at_s": 60}},
                              cluster={"warm_nodes": 6, "max_nodes": 6}, duration=400))
    if deadline_s is not None:   # to the microsecond, which no annotation says: onto the spec the driver reads
        member = fleet.members[0]
        serving = member.scenario.serving
        serving = replace(serving, kpa=replace(serving.kpa, progress_deadline_s=deadline_s))
        fleet = replace(fleet, members=(replace(member, scenario=replace(member.scenario, serving=serving)),))
    return run_fleet(fleet, 1)["services"]["a"]["rollout"]


def test_the_route_moves_when_initial_scale_pods_are_ready(timeline):
    log = _rollout()
    assert log["new_pods"] == 3
    before = [(t, n) for t, n, moved in timeline if not moved]
    t_first = min(t for t, n in before if n >= 1)
    t_third = min(t for t, n, _ in timeline if n >= 3)
    assert t_first < t_third                                  # the pods' readiness is staggered
    assert all(n < 3 for _, n in before)                      # not moved while fewer than 3 were Ready
    assert log["ready_s"] == pytest.approx(t_third - 60)


def test_ready_exactly_at_the_progress_deadline_is_in_time():
    """Kubernetes' DeploymentTimedOut: the deadline is exceeded only once now is after start + deadline."""
    ready_s = _rollout()["ready_s"]
    assert _rollout(deadline_s=ready_s)["ready_s"] == ready_s
    assert _rollout(deadline_s=ready_s - 1)["ready_s"] is None

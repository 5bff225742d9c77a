"""The KPA's 1 s scrapes (simulation/autoscaler/loop.py, the pods' lazy `catch_up`, the activator's stat)."""

from __future__ import annotations

from simulation.fleet import load_fleet, run_fleet
from tests.simulation.test_fleet import CLUSTER, _svc


def test_a_revision_started_late_scrapes_its_pods_on_the_clock_it_runs_on(monkeypatch):
    """A rollout's new revision (created at t = 61.5) splits its pods' load at its own scrape times: no
    per-second stat is negative and no pod is busy longer than it has lived (scrape k used to split at t = k
    counted from the revision's start, behind the pod's last change: negative seconds, then a jump)."""
    from simulation.pod import Pod

    stats, pods = [], set()
    orig = Pod.kpa_stat

    def spy(self, k):
        out = orig(self, k)
        stats.append(out[0])
        pods.add(self)
        return out

    monkeypatch.setattr(Pod, "kpa_stat", spy)
    for at in (60, 61.5):
        fleet = {"name": "t", "duration_s": 500, "cluster": {**CLUSTER, "warm_nodes": 2},
                 "services": [{"scenario": _svc("a", 1.0, min_r=1, max_r=2), "rollout": {"at_s": at}}]}
        out = run_fleet(load_fleet(fleet), 1)["services"]["a"]
        assert out["rollout"]["ready_s"] is not None
        new = [p for p in pods if p.sim.silent]
        assert new and stats and min(stats) >= 0.0
        for pod in pods:
            assert 0.0 <= pod.area_busy <= pod.env.now - pod.created + 1e-6

"""The KPA's 1 s scrapes (simulation/autoscaler/loop.py, the pods' lazy `catch_up`, the activator's stat)."""

from __future__ import annotations

import pytest

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


# -- lazy scrapes (no event per scrape) against one SimPy event per scrape -------------------------------------

def _trace(path, seed: int, n: int = 400) -> str:
    """Arrivals on whole and half seconds, some together: requests land exactly on scrape times."""
    import random

    rng = random.Random(seed)
    t, rows = 0.0, ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for _ in range(n):
        t += rng.choice((0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 2.0, 6.0))
        rows.append(f"{t},{rng.randint(10, 100)},{rng.randint(10, 100)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def _whole_second_scenario(scn, trace: str, serve: bool, seed: int) -> dict:
    import random

    rng = random.Random(seed)
    ann = {"autoscaling.knative.dev/window": f"{rng.choice((6, 10, 20))}s",
           "autoscaling.knative.dev/scale-down-delay": rng.choice(("0s", "4s"))}
    if serve:
        ann.update({"autoscaling.knative.dev/target-burst-capacity": "0", "autoscaling.knative.dev/metric": "rps",
                    "autoscaling.knative.dev/target": "1"})
    return {"inferenceService": scn.isvc(cc=2 if serve else 1, min_replicas=0, max_replicas=8, annotations=ann),
            "workload": {"kind": "trace", "path": trace},
            "server": {"kind": "simple", "base_s": rng.choice((0.5, 1.0, 2.0)), "distribution": "deterministic"},
            "cluster": {"gpus_per_node": 8, "max_nodes": 2, "warm_nodes": 1, "image_gib": 0,
                        "warmup_s": rng.choice((1, 2, 3)), "activator_probe_s": 0},
            "duration_s": 300}


def _logged_run(mapping: dict, eager: bool, monkeypatch) -> tuple[list, list, str]:
    from simulation import load_scenario, run_simulation
    from simulation.autoscaler.loop import KpaLoop

    records, ticks = [], []
    record, tick = KpaLoop._record, KpaLoop.tick

    def log_record(self, t, value):
        records.append((self.env.now if eager else None, t, value))
        record(self, t, value)

    def log_tick(self):
        tick(self)
        sim = self.sim
        ticks.append((self.env.now, self.want, self.ebc, self.state, sim.replicas, len(sim.endpoints), sim.proxy,
                      round(self.stable.window_average(self.env.now), 9), self.decider.panic_time))

    monkeypatch.setattr(KpaLoop, "EAGER", eager)
    monkeypatch.setattr(KpaLoop, "_record", log_record)
    monkeypatch.setattr(KpaLoop, "tick", log_tick)
    out = run_simulation(load_scenario(mapping), seed=3).to_json()
    monkeypatch.undo()
    return [r[1:] for r in records], ticks, out


@pytest.mark.parametrize("seed", range(6))
def test_lazy_scrapes_read_and_decide_exactly_what_a_scrape_event_per_second_would(scn, tmp_path, monkeypatch, seed):
    """Requests arriving, finishing and pods turning Ready exactly on whole seconds (a trace on whole and half
    seconds, deterministic service and start-up) in proxy and Serve mode: every recorded stat (second, value),
    every tick's decision and window average, and the whole report equal the eager reference's."""
    mapping = _whole_second_scenario(scn, _trace(tmp_path / "t.csv", seed), serve=seed % 2 == 1, seed=seed)
    eager = _logged_run(mapping, True, monkeypatch)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert len(eager[1]) > 100 and len({t[1] for t in eager[1]}) > 2     # it scaled, more than once
    assert lazy[1] == eager[1]
    last_tick = eager[1][-1][0]        # later scrapes run lazily only if something reads them (nothing does)
    assert [r for r in lazy[0] if r[0] < last_tick] == [r for r in eager[0] if r[0] < last_tick]
    assert lazy[2] == eager[2]

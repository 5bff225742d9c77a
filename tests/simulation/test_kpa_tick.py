"""`KpaLoop.tick` (its branches arranged for the common tick: data, want > 0, Active) against the tick written
the straightforward way, step by step as in knative/serving `pkg/reconciler/autoscaling/kpa/scaler.go: scale`
and `kpa.go: ReconcileKind, computeActiveCondition, activeThreshold`: the same decision, PA state, replicas,
activator mode and report at every tick, over scale from zero, initial-scale, min-scale, activation timeouts and
scale to zero."""

from __future__ import annotations

import inspect
import random
import textwrap

import pytest

from simulation import load_scenario, run_simulation
from simulation.autoscaler import loop as kpa_loop
from simulation.autoscaler.loop import KpaLoop, _floor, settled, signature


def _reference_tick(self) -> None:
    now = self.env._now
    sim = self.sim
    cfg = self.cfg
    ready = len(sim.endpoints)
    self.quiet = None
    moving = False
    stable = self.stable
    last = stable.last
    now_idx = _floor(now + 1e-9)
    if last is None or now_idx - last > stable.n:
        want = self.desired                       # no data: the last valid desired scale (−1 before any)
    else:
        want, self.ebc, _ = self.decider.scale(now, ready, stable.average_at(now_idx),
                                               self.panic.average_at(now_idx))
        self.desired = want
    if want >= 0 or self.state == "activating":
        lo = cfg.min_scale
        if not self.reached_initial and cfg.initial_scale > 1 and self.reachable:
            lo = max(lo, cfg.initial_scale)
        want = max(want, lo)
        if cfg.max_scale and want > cfg.max_scale:
            want = cfg.max_scale
        apply = True
        if want == 0:
            inactive = self.state == "inactive"
            want, apply = self._scale_to_zero(now)
            moving = not (apply and want == 0 and inactive)   # Inactive, past the timers: for good
        if apply and want >= 0 and not (want == sim.replicas == sim.n_live):
            sim.set_replicas(want)
            moving = True
    reached = self.reached_initial
    min_ready = max(cfg.min_scale, 1 if reached else cfg.initial_scale)
    if ready >= min_ready:
        self.reached_initial = True
    if not (want > 0 and self.state == "active" and 0 < min_ready <= ready):
        self._active_condition(now, want, ready, min_ready)
    self.want = want if want >= 0 else self.want
    proxy = want == 0 or self.ebc < 0 or (want < 0 and self.state == "inactive")
    if proxy != sim.proxy:
        sim.set_proxy(proxy)
    if (not moving and ready == len(sim.endpoints) and reached == self.reached_initial and not self.EAGER
            and settled(self, now, want, ready)):
        self.quiet = signature(self)


def _scenario(seed: int) -> dict:
    r = random.Random(seed)
    ann = {"autoscaling.knative.dev/window": f"{r.choice((6, 20, 60))}s",
           "autoscaling.knative.dev/initial-scale": str(r.choice((1, 1, 2, 3))),
           "autoscaling.knative.dev/scale-down-delay": r.choice(("0s", "0s", "10s")),
           "autoscaling.knative.dev/target-burst-capacity": r.choice(("211", "0", "2", "-1")),
           "serving.knative.dev/progress-deadline": r.choice(("60s", "600s"))}
    if r.random() < 0.3:
        ann["autoscaling.knative.dev/activation-scale"] = "2"
    return {"inferenceService": {
                "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                "metadata": {"name": "t", "annotations": ann},
                "spec": {"predictor": {"minReplicas": r.choice((0, 0, 1, 2)), "maxReplicas": r.choice((3, 5)),
                                       "containerConcurrency": r.choice((1, 2)), "timeout": 120,
                                       "model": {"modelFormat": {"name": "huggingface"}}}}},
            "workload": {"kind": "gamma", "rate": r.choice((0.02, 0.05, 0.3, 2.0)), "cv": r.choice((1.0, 6.0))},
            "server": {"kind": "simple", "base_s": r.choice((0.5, 2.0)), "distribution": "exponential"},
            "cluster": {"gpus_per_node": 8, "max_nodes": 2, "warm_nodes": 1, "image_gib": 0,
                        "warmup_s": r.choice((2, 90, 200, 200)), "activator_probe_s": 0},
            "initial_replicas": r.choice((None, 0, 0, 1)),
            "duration_s": 1500}


def _logged(mapping: dict, seed: int, tick, monkeypatch) -> tuple[list, str]:
    log = []

    def logged(self):
        tick(self)
        log.append((self.env.now, self.want, self.ebc, self.state, self.reached_initial, self.sim.replicas,
                    self.sim.proxy, self.quiet is not None))

    monkeypatch.setattr(KpaLoop, "tick", logged)
    mapping = {k: v for k, v in mapping.items() if v is not None}
    out = run_simulation(load_scenario(mapping), seed=seed).to_json()
    monkeypatch.undo()
    return log, out


def _mutant(old: str, new: str):
    src = textwrap.dedent(inspect.getsource(KpaLoop.tick))
    assert old in src
    ns: dict = {}
    exec(compile(src.replace(old, new), "mutant", "exec"), vars(kpa_loop), ns)
    return ns["tick"]


MUTANTS = {   # initial-scale 1 read as a floor before the target is initialized; the PA state ignored for want < 0
    "initial_floor": ("cfg.initial_scale > 1 and cfg.initial_scale > lo", "cfg.initial_scale > lo"),
    "unknown_active": ('self.ebc < 0 or self.state == "inactive"', "self.ebc < 0"),
}


def _slow_activation() -> dict:
    """Scale from zero (initial-scale 1, no pod at first) with a pod slower to start than the request's timeout
    and the activation deadline: the decider wants 0 again before the scale target is initialized."""
    m = _scenario(0)
    m["inferenceService"]["metadata"]["annotations"].update({
        "autoscaling.knative.dev/window": "6s", "autoscaling.knative.dev/initial-scale": "1",
        "serving.knative.dev/progress-deadline": "60s"})
    m["inferenceService"]["spec"]["predictor"]["minReplicas"] = 0
    m.update(initial_replicas=0, workload={"kind": "gamma", "rate": 0.02, "cv": 1.0})
    m["cluster"]["warmup_s"] = 200
    return m


CASES = [(seed, _scenario(seed)) for seed in range(24)] + [(0, _slow_activation())]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_tick_decides_as_the_straightforward_tick(case, monkeypatch):
    seed, mapping = CASES[case]
    ours = _logged(mapping, seed, KpaLoop.tick, monkeypatch)
    ref = _logged(mapping, seed, _reference_tick, monkeypatch)
    assert ref[0]
    assert ours == ref


def test_the_scenarios_cover_the_ticks_branches(monkeypatch):
    """Scale from zero and to zero, activating before and after the scale target is initialized, Active."""
    seen = set()
    for seed, mapping in CASES:
        for _, want, _, state, reached, *_ in _logged(mapping, seed, KpaLoop.tick, monkeypatch)[0]:
            seen.add((state, reached, min(want, 1)))
    assert {("activating", False, 1), ("activating", True, 1), ("active", True, 1), ("inactive", False, 0),
            ("inactive", True, 0)} <= seen


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_changed_tick_is_caught(mutant, monkeypatch):
    changed = _mutant(*MUTANTS[mutant])
    assert any(_logged(mapping, seed, changed, monkeypatch) != _logged(mapping, seed, _reference_tick, monkeypatch)
               for seed, mapping in CASES)


def test_an_invalid_scale_result_decides_nothing(monkeypatch):
    """A result the decider marks invalid (`kpa.INVALID`, Knative's invalidSR) leaves the wanted scale and the
    excess burst capacity as they were, as a tick without data does (autoscaler.go tickScaler applies only a valid
    one): never read as 0 pods and an EBC of 0."""
    from simulation.autoscaler.kpa import INVALID, KpaDecider

    mapping = _scenario(1)
    mapping["inferenceService"]["metadata"]["annotations"]["autoscaling.knative.dev/target-burst-capacity"] = "211"
    mapping["inferenceService"]["spec"]["predictor"]["minReplicas"] = 1
    mapping["initial_replicas"] = 1
    monkeypatch.setattr(KpaDecider, "scale", lambda self, now, ready, stable, panic: INVALID)
    log, _ = _logged(mapping, 1, KpaLoop.tick, monkeypatch)
    assert log
    assert {(want, ebc) for _, want, ebc, *_ in log} == {(1, log[0][2])} and log[0][2] < 0

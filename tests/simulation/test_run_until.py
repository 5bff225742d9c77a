"""`clock.run_until` (SimPy's `Environment.run(until=…)` with `step` inlined) against SimPy's own `run`: the same
events in the same order, the same stop, the same failure, and the same seeded reports."""

from __future__ import annotations

import random

import pytest
import simpy

from simulation import clock, engine, load_scenario
from simulation.clock import call_later, run_until
from tests.simulation.test_fused_path import random_scenario


def _trace(runner) -> tuple[list, float, list]:
    """Timeouts, processes, Calls and whole-number ties (events exactly at the stop time included) on one
    environment: (what ran, in order, with the time; the clock after the run; what is still queued)."""
    env = simpy.Environment()
    rng = random.Random(5)
    log = []

    def proc(name):
        for _ in range(4):
            yield env.timeout(rng.choice((0.5, 1.0, 2.0)))
            log.append((name, env.now))

    def tick(i):
        log.append(("call", i, env.now))
        if i < 12:
            call_later(env, 1.0, tick, i + 1)

    for name in "ab":
        env.process(proc(name))
    call_later(env, 0.0, tick, 0)
    for at in (3.0, 5.0, 5.0, 7.25, 10.0):      # 10.0: exactly at the stop time, after it
        env.timeout(at).callbacks.append(lambda ev, at=at: log.append(("timeout", at, env.now)))
    runner(env, 10.0)
    return log, env.now, sorted((t, p) for t, p, _, ev in env._queue if ev.callbacks)


def _simpy(env, at):
    env.run(until=at)


def test_run_until_runs_what_simpy_runs_in_the_same_order_and_stops_at_the_same_place():
    ours, ref = _trace(run_until), _trace(_simpy)
    assert len(ours[0]) > 20 and ("timeout", 10.0, 10.0) not in ours[0]
    assert ours == ref


def test_a_failed_event_crashes_the_run_as_in_simpy():
    """A failed event nobody defused raises a copy of its exception (SimPy's `step`); a defused one does not."""
    for runner in (run_until, _simpy):
        env = simpy.Environment()
        env.timeout(1.0).callbacks.append(lambda ev: None)
        bad = env.event()
        bad.fail(ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            runner(env, 5.0)
        env = simpy.Environment()
        ok = env.event()
        ok.fail(ValueError("defused"))
        ok.defused = True
        runner(env, 5.0)
        assert env.now == 5.0
    with pytest.raises(ValueError, match="must be greater"):
        run_until(simpy.Environment(), 0.0)


def test_a_stop_that_lets_same_time_events_run_first_is_caught():
    """The mutant: the stop event scheduled with NORMAL priority (after the events already queued at its time)."""
    def late_stop(env, at):
        stop = env.event()
        stop._ok, stop._value = True, None
        env.schedule(stop, clock.NORMAL, at - env.now)
        while True:
            env.step()
            if stop.callbacks is None:
                return
    assert _trace(late_stop) != _trace(_simpy)


@pytest.mark.parametrize("seed", range(6))
def test_reports_are_the_same_with_simpys_run(scn, seed, monkeypatch):
    mapping = random_scenario(seed, scn.isvc)
    ours = engine.Sim(load_scenario(mapping), seed).run().to_json()
    monkeypatch.setattr(engine, "run_until", lambda env, at: env.run(until=at))
    assert ours == engine.Sim(load_scenario(mapping), seed).run().to_json()


@pytest.mark.parametrize("extra", [{}, {"node_loss": {"at_s": 200, "not_ready_s": 20}}])
def test_a_fleet_reports_the_same_with_simpys_run(extra, monkeypatch):
    """simulation/fleet.py runs the shared clock of its services with `run_until` too: a rollout on one service,
    scale from zero on the other, a node lost mid-run — the same result as `Environment.run`."""
    import json

    from simulation import fleet
    from tests.simulation.test_fleet import _fleet, _run, _svc

    mapping = _fleet({"scenario": _svc("a", 1.0, min_r=1, max_r=3)},
                     {"scenario": _svc("b", 0.5, min_r=0, max_r=3), "rollout": {"at_s": 150}}, duration=400.0, **extra)
    ours = json.dumps(_run(mapping), sort_keys=True)
    monkeypatch.setattr(fleet, "run_until", lambda env, at: env.run(until=at))
    assert ours == json.dumps(_run(mapping), sort_keys=True)

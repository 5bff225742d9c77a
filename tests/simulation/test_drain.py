"""The drain after `duration_s`: bounded at load (`drain_s` at most a day), its cost the events in it, not its
seconds, and its result what the 1-s step loop gives (review rev9-cli finding 3: `base_s: 1e12` with
`drain_s: 1e12` never ended; base_s 1e7 took 33 CPU s for 2 requests)."""

from __future__ import annotations

import math
import random

import pytest
import simpy

from simulation import engine, load_scenario
from simulation.clock import run_until
from simulation.engine import Sim, drain_stop
from simulation.scenario import MAX_DRAIN_S
from tests.simulation.conftest import isvc
from tests.simulation.test_fused_path import random_scenario
from validation.errors import InputError

STANDARD = {"serving.kserve.io/deploymentMode": "Standard"}
# One request a minute on one Standard-mode pod (no queue-proxy timeout) whose model server takes 10^7 s: only the
# HPA's 15-s syncs are scheduled while the drain waits for it.
LONG = {"inferenceService": isvc(cc=0, min_replicas=1, max_replicas=1, annotations=STANDARD),
        "workload": {"kind": "poisson", "rate": 1 / 60, "input_tokens": 10, "output_tokens": 10},
        "cluster": {"gpus_per_node": 1, "max_nodes": 1},
        "server": {"kind": "simple", "base_s": 1e7, "distribution": "deterministic"},
        "duration_s": 300, "drain_s": MAX_DRAIN_S}


def _steps(now: float, next_event: float, end: float) -> float:
    """The 1-s loop the drain had: `env.run(until=min(end, now + 1.0))` while the next event is not reached."""
    x = now
    while True:
        x = min(end, x + 1.0)
        if x >= next_event or x >= end:
            return x


@pytest.mark.parametrize("seed", range(6))
def test_drain_stop_is_the_float_the_one_second_steps_reach(seed):
    r = random.Random(seed)
    cases = [(300.000000001, math.inf, 1200.000000001), (0.0, 5.5, 10.0), (511.3, 515.0, 900.0),
             (1023.999999999, 1100.0, 5000.0), (60.0, 61.0, 960.0), (60.0, 60.0, 960.0), (7.25, 8.25, 8.0)]
    for _ in range(300):
        now = r.choice([r.uniform(0, 2000), r.randrange(0, 4000) + r.choice([0.0, 1e-9, 0.5, 1 / 3]),
                        r.uniform(1e5, 3e6)])
        end = now + r.choice([0.0, 0.5, r.uniform(0, 100), r.uniform(0, 90_000)])
        nxt = r.choice([math.inf, now, now + r.uniform(0, 3), now + r.uniform(0, 95_000),
                        math.floor(now) + r.randrange(1, 3000)])
        cases.append((now, nxt, end))
    for now, nxt, end in cases:
        if end <= now:
            continue
        assert drain_stop(now, nxt, end) == _steps(now, nxt, end), (now, nxt, end)


def test_drain_s_is_bounded_at_load_naming_the_key():
    for bad in (1e12, MAX_DRAIN_S + 1, -1, float("nan")):
        with pytest.raises(InputError) as err:
            load_scenario({**LONG, "drain_s": bad})
        assert f"drain_s: got {bad!r}" in str(err.value)
        assert "expected a number between 0.0 and 86400.0" in str(err.value)
    assert load_scenario(LONG).drain_s == MAX_DRAIN_S


def test_a_day_of_drain_around_one_long_request_is_a_few_steps_not_86400(monkeypatch):
    stops: list[float] = []

    def counting(env, until):
        stops.append(until)
        run_until(env, until)

    monkeypatch.setattr(engine, "run_until", counting)
    monkeypatch.setattr(simpy.Environment, "run", lambda env, until=None: stops.append(until) or run_until(env, until))
    report = Sim(load_scenario(LONG), 1).run().to_dict()
    assert len(stops) <= MAX_DRAIN_S / 15 + 2, len(stops)   # the HPA's 15-s syncs; the 1-s loop took 86,400 steps
    assert stops[-1] == 300 + MAX_DRAIN_S
    assert report["requests"] >= 2 and report["status_counts"] == {"unanswered": report["requests"]}


def _one_second_loop(self, progress=None):
    """`Sim.run` as it was: the drain in 1-s steps with SimPy's own run."""
    sc, env = self.scenario, self.env
    self.start()
    run_until(env, sc.duration_s + 1e-9)
    end = sc.duration_s + sc.drain_s
    while self.busy and env.now < end:
        env.run(until=min(end, env.now + 1.0))
    return self.finish()


@pytest.mark.parametrize("seed", range(8))
def test_skipping_empty_seconds_changes_no_report(seed, monkeypatch):
    """Slow servers, retries with long back-off and odd horizons, so that drains have long gaps between events
    (Knative ticks, HPA syncs, back-offs): the report is byte for byte the 1-s loop's."""
    r = random.Random(seed * 7 + 1)
    m = random_scenario(seed, isvc)
    m["server"]["base_s"] = r.choice([3.0, 17.3, 60.0, 250.0])
    m["duration_s"] = r.choice([60, 61.7, 33.3])
    m["drain_s"] = r.choice([7.25, 60, 300, 1000.5])
    if seed % 2:
        m["client"] = {"max_retries": 2, "backoff_base_s": 40.0, "jitter": "full", "retry_on": [429, 502, 503, 504]}
    scenario = load_scenario(m)
    new = Sim(scenario, seed).run().to_json()
    monkeypatch.setattr(Sim, "run", _one_second_loop)
    assert Sim(scenario, seed).run().to_json() == new

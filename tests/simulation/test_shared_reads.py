"""Pods loading weights from the model cache at once share its file system's reads (simulation/shared_reads.py):
max-min fair shares, each pod within its own rate; a pod alone, or pods within the total, load as before."""

from __future__ import annotations

import pytest
import simpy

from simulation.clock import call_later
from simulation.shared_reads import SharedReads, fair_rates

CLUSTER = {"gpus_per_node": 1, "max_nodes": 10, "warm_nodes": 0, "node_provision_s": 100, "image_gib": 10,
           "image_pull_mib_s": 100, "model_cache_hit_ratio": 1.0, "load_gib_s": 1.5, "warmup_s": 20,
           "activator_probe_s": 0.2}
WEIGHTS_GIB = 15
BURSTING_GIB_S = 3 * 100 / 1024   # an EFS file system bursting: 100 MiB/s metered, reads metered at a third


def _pods_at_once(scn, pods: int, cluster: dict, startup_probe: dict | None = None) -> dict:
    """`pods` pods created together on `pods` new nodes: their loads start at the same instant."""
    isvc = scn.isvc(cc=1, min_replicas=pods, max_replicas=pods)
    if startup_probe:
        isvc["spec"]["predictor"]["model"]["startupProbe"] = startup_probe
    return scn.run({"inferenceService": isvc,
                    "workload": {"kind": "poisson", "rate": 0.01},
                    "cluster": {**CLUSTER, **cluster}, "model": {"name": "m", "weights_gib": WEIGHTS_GIB},
                    "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"},
                    "initial_replicas": 0, "duration_s": 1500})


def test_fair_rates_keep_a_slow_reader_and_split_the_rest():
    assert fair_rates([1.0, 1.0], 3.0) == [1.0, 1.0]                 # within the total: each its own rate
    assert fair_rates([0.2, 1.0, 1.0], 1.2) == pytest.approx([0.2, 0.5, 0.5])
    assert sum(fair_rates([1.5] * 10, 0.3)) == pytest.approx(0.3)


def test_ten_pods_on_a_bursting_file_system_load_ten_times_longer_than_one(scn):
    alone = _pods_at_once(scn, 1, {"load_total_gib_s": BURSTING_GIB_S})["cold_start_phases_mean_s"]["load_s"]
    ten = _pods_at_once(scn, 10, {"load_total_gib_s": BURSTING_GIB_S})["cold_start_phases_mean_s"]["load_s"]
    assert alone == pytest.approx(WEIGHTS_GIB / BURSTING_GIB_S)          # 51.2 s: the file system, not the pod's 1.5
    assert ten == pytest.approx(10 * alone)                               # 512 s each: 150 GiB at 300 MiB/s


def test_loads_within_the_total_are_unchanged_to_the_bit(scn):
    unshared = _pods_at_once(scn, 10, {})
    elastic = _pods_at_once(scn, 10, {"load_total_gib_s": 15.0})   # 10 × 1.5 GiB/s: just within it
    assert unshared["cold_start_phases_mean_s"]["load_s"] == WEIGHTS_GIB / 1.5
    assert elastic == unshared


def test_a_pod_killed_while_loading_gives_its_share_back_and_reads_again():
    env = simpy.Environment()
    reads = SharedReads(env, 1.0)
    moved: dict[str, list] = {"a": [], "b": []}

    class Pod:
        def __init__(self, name):
            self.name = name

        def load_moved(self, end):
            moved[self.name].append((env.now, end))

    a, b = Pod("a"), Pod("b")
    assert reads.start(a, 2.0, 1.0) == 2.0            # alone: its own rate, its end its own to schedule
    env.run(until=1.0)
    assert reads.start(b, 2.0, 1.0) is None           # half of the file system from t = 1: told when done
    assert moved["a"] == [(1.0, None)]                  # a's last GiB at half speed: its end is no longer known
    env.run(until=2.0)
    reads.stop(a)                                          # a is killed at t = 2: b has the whole file system
    assert reads.reading(b) and not reads.reading(a)
    env.run(until=10.0)
    assert moved["b"] == [(pytest.approx(3.5), pytest.approx(3.5))]   # 0.5 GiB read, 1.5 GiB left at 1 GiB/s
    assert moved["a"] == [(1.0, None)]


def test_a_finished_load_speeds_up_the_others():
    env = simpy.Environment()
    reads = SharedReads(env, 1.0)
    ends = {}

    class Pod:
        def __init__(self, name):
            self.name = name

        def load_moved(self, end):
            ends[self.name] = end

    a, b = Pod("a"), Pod("b")
    reads.start(a, 1.0, 1.0)
    reads.start(b, 3.0, 1.0)                   # both at 0.5: a ends at 2, then b alone at 1 GiB/s: 2 GiB left
    assert ends == {"a": None}
    env.run(until=10)
    assert ends == {"a": pytest.approx(2.0), "b": pytest.approx(4.0)}
    assert not reads.reading(a) and not reads.reading(b)


def test_a_startup_probe_shorter_than_the_shared_load_restarts_the_pods(scn):
    # 10 pods × 15 GiB at 300 MiB/s: 512 s each; a 300 s startup budget kills every one mid-load, again and again.
    probe = {"httpGet": {"path": "/v2/models/svc/ready", "port": 8080}, "periodSeconds": 10, "failureThreshold": 30}
    shared = _pods_at_once(scn, 10, {"load_total_gib_s": BURSTING_GIB_S}, probe)
    alone = _pods_at_once(scn, 10, {}, probe)
    assert alone["pod_restarts"] == 0 and alone["cold_starts"] == 10
    assert shared["pod_restarts"] >= 10 and shared["restart_reasons"] == {"startupProbe failed": shared["pod_restarts"]}


class _Pod:
    """A pod as SharedReads sees it: it schedules its own end while told one, else waits for load_moved(end)."""

    def __init__(self, env, reads, name, gib, cap):
        self.env, self.name, self.done, self.moves, self.call = env, name, None, 0, None
        d = reads.start(self, gib, cap)
        if d is not None:
            self.call = call_later(env, d, self.finish, env.now + d)

    def load_moved(self, end):
        self.moves += 1
        if self.call is not None:
            self.call.cancel()
            self.call = None
        if end is not None:
            self.call = call_later(self.env, end - self.env.now, self.finish, end)

    def finish(self, end):
        self.done = end


def _reference(starts, total):
    """Finish times by brute force: at every start and finish, each reader's rate is its max-min fair share."""
    left = {}
    t, done, pending = 0.0, {}, sorted(starts)
    while pending or left:
        names = list(left)
        rates = dict(zip(names, fair_rates([left[n][1] for n in names], total)))
        nxt = min([t + left[n][0] / rates[n] for n in names] + [pending[0][0] if pending else float("inf")])
        for n in names:
            left[n][0] -= rates[n] * (nxt - t)
            if left[n][0] <= 1e-9 * max(1.0, nxt):
                done[n] = nxt
                del left[n]
        t = nxt
        while pending and pending[0][0] <= t:
            _, name, gib, cap = pending.pop(0)
            left[name] = [gib, cap]
    return done


def test_shared_ends_match_the_max_min_fair_reference():
    """Random pods (mixed caps, some below the share) starting over time: each ends when the brute-force max-min
    fair division (`fair_rates` at every start and end) says."""
    import random
    rng = random.Random(7)
    starts = [(rng.uniform(0, 40), f"p{i}", rng.uniform(2, 20), rng.choice([0.2, 0.9, 1.5, rng.uniform(0.1, 2)]))
              for i in range(60)]
    env = simpy.Environment()
    reads = SharedReads(env, 3.0)
    pods = {}
    for t, name, gib, cap in starts:
        call_later(env, t, lambda n=name, g=gib, c=cap: pods.__setitem__(n, _Pod(env, reads, n, g, c)))
    env.run()
    expected = _reference(starts, 3.0)
    assert ({n: p.done for n, p in pods.items()}
            == {n: pytest.approx(e, rel=1e-9, abs=1e-6) for n, e in expected.items()})


def test_a_thousand_pods_at_once_cost_one_load_moved_each():
    """Every start or end while the reads are shared moves every reader at the equal share; only the pods whose
    end is no longer known and, later, whose read is done are told: at most two calls per pod (it was n² / 2)."""
    env = simpy.Environment()
    reads = SharedReads(env, 0.3)
    pods = []
    for i in range(1000):
        call_later(env, i * 0.1, lambda: pods.append(_Pod(env, reads, len(pods), 15.0, 1.5)))
    env.run()
    assert reads.moves == sum(p.moves for p in pods) <= 2 * len(pods)
    assert max(p.done for p in pods) == pytest.approx(1000 * 15.0 / 0.3)
    assert all(p.done is not None for p in pods) and not reads.readers

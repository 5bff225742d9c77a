"""Pods loading weights from the model cache at once share its file system's reads (simulation/shared_reads.py):
max-min fair shares, each pod within its own rate; a pod alone, or pods within the total, load as before."""

from __future__ import annotations

import pytest
import simpy

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
    elastic = _pods_at_once(scn, 10, {"load_total_gib_s": 20.0})   # EFS Elastic's lowest Regional read limit
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
    assert reads.start(a, 2.0, 1.0) == 2.0            # alone: its own rate
    env.run(until=1.0)
    assert reads.start(b, 2.0, 1.0) == pytest.approx(4.0)   # half of the file system from t = 1
    assert moved["a"] == [(1.0, pytest.approx(3.0))]     # a's last GiB at half speed: done at 3
    env.run(until=2.0)
    reads.stop(a)                                          # a is killed at t = 2: b has the whole file system
    assert reads.reading(b) and not reads.reading(a)
    assert moved["b"] == [(2.0, pytest.approx(3.5))]     # 0.5 GiB read, 1.5 GiB left at 1 GiB/s


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
    assert ends == {"a": pytest.approx(2.0)}
    env.run(until=10)
    assert ends["b"] == pytest.approx(4.0) and not reads.reading(a) and not reads.reading(b)


def test_a_startup_probe_shorter_than_the_shared_load_restarts_the_pods(scn):
    # 10 pods × 15 GiB at 300 MiB/s: 512 s each; a 300 s startup budget kills every one mid-load, again and again.
    probe = {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10, "failureThreshold": 30}
    shared = _pods_at_once(scn, 10, {"load_total_gib_s": BURSTING_GIB_S}, probe)
    alone = _pods_at_once(scn, 10, {}, probe)
    assert alone["pod_restarts"] == 0 and alone["cold_starts"] == 10
    assert shared["pod_restarts"] >= 10 and shared["restart_reasons"] == {"startupProbe failed": shared["pod_restarts"]}

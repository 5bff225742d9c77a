"""Cold start and scale to zero: the whole pipeline is on the first request's latency; zero after stable + grace."""

from __future__ import annotations

import pytest

CLUSTER = {"gpus_per_node": 1, "max_nodes": 2, "warm_nodes": 0, "node_provision_s": 100, "image_gib": 10,
           "image_pull_mib_s": 100, "model_download_mib_s": 500, "load_gib_s": 2, "warmup_s": 20,
           "activator_probe_s": 0.2}
PIPELINE_S = 100 + 10 * 1024 / 100 + 16 * 1024 / 500 + 16 / 2 + 20     # node + pull + download + load + warm-up


def one_request(tmp_path, scn, annotations=None, cc=1, cluster=None):
    trace = tmp_path / "one.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n")
    return {
        "inferenceService": scn.isvc(cc=cc, min_replicas=0, max_replicas=3, annotations=annotations),
        "workload": {"kind": "trace", "path": str(trace)},
        "cluster": {**CLUSTER, **(cluster or {})},
        "model": {"name": "m", "weights_gib": 16},
        "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"},
        "initial_replicas": 0,
        "duration_s": 600,
        "series_interval_s": 1,
    }


def test_single_request_from_zero_pays_the_whole_cold_start(tmp_path, scn):
    # target utilisation 100 % with CC 1 → ceil(1 / 1) = 1 pod for one request
    d = scn.run(one_request(tmp_path, scn, {"autoscaling.knative.dev/target-utilization-percentage": "100"}))
    assert d["status_counts"] == {"200": 1}
    assert d["cold_starts"] == 1 and d["pods_created"] == 1
    lat = d["latency_s"]["p50"]
    # pipeline + 1 s service + at most one activator probe period (0.2 s)
    assert PIPELINE_S + 1.0 <= lat <= PIPELINE_S + 1.0 + 0.2 + 1e-6
    phases = d["cold_start_phases_mean_s"]
    assert phases == pytest.approx({"node_s": 100, "image_pull_s": 102.4, "download_s": 32.768, "load_s": 8,
                                    "warmup_s": 20})


def test_default_target_gives_two_pods_for_one_request_at_cc1(tmp_path, scn):
    # reference §3 (derived): TargetValue 0.7 → ceil(1 / 0.7) = 2 pods,
    # and dppc / rp = 2 → panic from the first tick
    d = scn.run(one_request(tmp_path, scn))
    assert d["cold_starts"] == 2 and d["status_counts"] == {"200": 1}


def test_cached_image_and_model_skip_those_phases(tmp_path, scn):
    d = scn.run(one_request(tmp_path, scn, {"autoscaling.knative.dev/target-utilization-percentage": "100"},
                            cluster={"warm_nodes": 1, "image_cached_on_warm_nodes": True,
                                     "model_cached_on_warm_nodes": True}))
    ph = d["cold_start_phases_mean_s"]
    assert ph["node_s"] == 0 and ph["image_pull_s"] == 0 and ph["download_s"] == 0
    assert d["latency_s"]["p50"] == pytest.approx(8 + 20 + 1.0, abs=0.25)


def test_scale_to_zero_after_stable_window_plus_grace(scn):
    # one warm pod, no traffic; TBC 0 keeps the activator out of the path while pods exist, so the 30 s grace
    # applies in full: Active for the 60 s stable window → Inactive → +30 s → 0 pods.
    m = {"inferenceService": scn.isvc(cc=1, min_replicas=0, max_replicas=3,
                                      annotations={"autoscaling.knative.dev/target-burst-capacity": "0"}),
         "workload": {"kind": "step", "rate": 1.0, "at_s": 0.0, "to_rate": 0.0},
         "duration_s": 200, "series_interval_s": 1}
    d = scn.run(m)
    s = d["replica_series"]
    zero_at = next(t for t, n in zip(s["t"], s["pods"]) if n == 0)
    assert 90 <= zero_at <= 92
    assert all(n == 1 for t, n in zip(s["t"], s["pods"]) if t < 90)


def test_min_replicas_default_one_never_scales_to_zero(scn):
    m = {"inferenceService": scn.isvc(cc=1, min_replicas=None, max_replicas=3),
         "workload": {"kind": "step", "rate": 1.0, "at_s": 0.0, "to_rate": 0.0}, "duration_s": 300}
    d = scn.run(m)
    assert d["replicas"] == {"min": 1, "mean": 1.0, "max": 1}


def test_node_group_full_leaves_pods_pending(tmp_path, scn):
    m = one_request(tmp_path, scn, cluster={"max_nodes": 1})
    d = scn.run(m)
    assert d["pods_created"] == 2 and d["cold_starts"] == 1      # the second pod never gets a GPU
    assert d["nodes_provisioned"] == 1


def test_startup_probe_budget_restarts_the_container(tmp_path, scn):
    m = one_request(tmp_path, scn, {"autoscaling.knative.dev/target-utilization-percentage": "100"})
    m["inferenceService"]["spec"]["predictor"]["model"]["startupProbe"] = {
        "initialDelaySeconds": 0, "periodSeconds": 5, "failureThreshold": 4}   # 20 s < load 8 s + warm-up 20 s
    m["duration_s"] = 400
    m["drain_s"] = 0
    d = scn.run(m)
    assert d["pod_restarts"] >= 2 and d["restart_reasons"] == {"startupProbe failed": d["pod_restarts"]}
    assert d["cold_starts"] == 0


def test_startup_probe_kill_time_follows_the_kubelet_worker_ticks():
    from simulation.isvc import Probe
    p = Probe(initial_delay_s=30, period_s=10, failure_threshold=3)
    # ticks from the worker's creation at t = 0: the container starting at 0 is probed at 30, 40, 50 → killed at 50
    assert p.kill_after_s(0.0, 0.0) == pytest.approx(50)   # d + (f − 1)·p
    # a container starting 1 s after a tick waits for the 31 s tick past its initial delay: killed 59 s in
    assert p.kill_after_s(1.0, 0.0) == pytest.approx(59)
    for start in (0.0, 2.5, 7.0, 9.99):
        assert 50 - 1e-9 <= p.kill_after_s(start, 0.0) < 60   # always within [d + (f−1)p, d + f·p)


def test_restart_backoff_doubles(tmp_path, scn):
    m = one_request(tmp_path, scn, {"autoscaling.knative.dev/target-utilization-percentage": "100"})
    m["inferenceService"]["spec"]["predictor"]["model"]["startupProbe"] = {
        "initialDelaySeconds": 0, "periodSeconds": 5, "failureThreshold": 4}
    m["duration_s"] = 600
    m["drain_s"] = 0
    from simulation import load_scenario
    from simulation.engine import Sim
    sim = Sim(load_scenario(m, base_dir=scn.root), 1)
    times = []
    orig = sim.on_pod_restart

    def spy(pod, reason):
        times.append(sim.env.now)
        orig(pod, reason)
    sim.on_pod_restart = spy
    sim.run()
    gaps = [b - a for a, b in zip(times, times[1:])]
    # the first restart is immediate, then 10, 20, 40 ... s; each restarted attempt starts on a probe tick (the
    # kill was one; the back-offs are multiples of the 5 s period), so it probes at 0, 5, 10, 15 s and the 4th
    # failure kills it at 15 s = d + (f − 1)·p (kubelet prober/worker.go: ticks run from the worker's creation)
    assert gaps[:4] == pytest.approx([15, 25, 35, 55])

"""The PodAutoscaler's activation, against knative/serving `pkg/reconciler/autoscaling/kpa`:
- `scaler.go: handleScaleToZero`: an activation that has not made the PA Active within the progress deadline +
  30 s scales back to 0 when the decider wants 0; the deadline is the revision's
  `serving.knative.dev/progress-deadline` (copied onto the PA, `PodAutoscaler.ProgressDeadline`), else
  config-deployment's 600 s;
- `kpa.go: activeThreshold`: the PA is Active once max(min-scale, initial-scale) pods are Ready until the scale
  target has been initialized, max(min-scale, 1) after.
"""

from __future__ import annotations

import pytest

from simulation.autoscaler.loop import KpaLoop

DEADLINE = "serving.knative.dev/progress-deadline"


def _log_ticks(monkeypatch) -> list[tuple]:
    """A list that gets (time, PA state, replicas, Ready pods) after every KPA tick from now on."""
    log: list[tuple] = []
    tick = KpaLoop.tick

    def logged(self):
        tick(self)
        log.append((self.env.now, self.state, self.sim.replicas, len(self.sim.endpoints)))

    monkeypatch.setattr(KpaLoop, "tick", logged)
    return log


def _ticks(scn, tmp_path, monkeypatch, annotations: dict, cluster: dict, duration: float,
           initial_replicas: int = 0, **top) -> list[tuple]:
    """(time, PA state, replicas, Ready pods) after every KPA tick of a scale-from-zero run."""
    log = _log_ticks(monkeypatch)
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n10,10,10\n")
    scn.run({"inferenceService": scn.isvc(cc=1, min_replicas=0, max_replicas=3, annotations=annotations,
                                          timeout=60),
             "workload": {"kind": "trace", "path": str(trace)},
             "model": {"name": "m", "weights_gib": 7},
             "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"},
             "cluster": cluster, "duration_s": duration, "warmup_s": 0, "initial_replicas": initial_replicas,
             **top})
    return log


def _activation(log: list[tuple]) -> tuple[float, float | None, float | None]:
    """(when the PA first started activating, when it first scaled back to 0 while activating, when a pod first
    turned Ready after that)."""
    start = next(t for t, state, *_ in log if state == "activating")
    dropped = next((t for (t, state, replicas, _), prev in zip(log[1:], log) if prev[1] == "activating"
                    and prev[2] > 0 and replicas == 0), None)
    ready = next((t for t, _, _, ready in log if t > start and ready), None)
    return start, dropped, ready


def _reviewers_repro(monkeypatch, deadline: str) -> list[tuple]:
    """/tmp/rev-sim/pd.yaml: sparse Poisson traffic to a scaled-to-zero service whose pod takes ~790 s to turn
    Ready (between two ticks); every request gives up first (revision timeout 300 s), and without metrics the
    decider's last desired scale (> 0) stands until the pod reports."""
    from simulation import load_scenario, run_simulation

    log = _log_ticks(monkeypatch)
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llama-8b", "annotations": {"serving.kserve.io/deploymentMode": "Knative",
                                                               DEADLINE: deadline}},
            "spec": {"predictor": {"minReplicas": 0, "maxReplicas": 2, "containerConcurrency": 1, "timeout": 300,
                                   "model": {"modelFormat": {"name": "huggingface"},
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}}}}
    run_simulation(load_scenario({
        "inferenceService": isvc,
        "workload": {"kind": "poisson", "rate": 0.0015, "input_tokens": 100, "output_tokens": 50},
        "client": {"timeout_s": 3000}, "gateway": {"timeout_s": 3000},
        "cluster": {"instance_type": "g5.2xlarge", "gpus_per_node": 1, "max_nodes": 2, "node_provision_s": 100,
                    "image_gib": 12, "image_pull_mib_s": 20, "model_download_mib_s": 20, "load_gib_s": 1.5,
                    "warmup_s": 10, "model_cache": "none"},
        "model": {"name": "llama-3.1-8b-instruct", "weights_gib": 15},
        "server": {"kind": "simple", "base_s": 0.05, "per_output_token_s": 0.01},
        "duration_s": 1500, "warmup_s": 0}), seed=1)
    return log


@pytest.mark.parametrize("deadline, gives_up", [("600s", True), ("12m", True), ("13m30s", False), ("1200s", False)])
def test_the_progress_deadline_annotation_decides_whether_a_slow_activation_is_given_up(monkeypatch, deadline,
                                                                                         gives_up):
    """The reviewer's repro: activation at ~272 s, the pod Ready ~790 s later, when the first metrics (zeros) make
    the decider want 0. Knative then scales to zero iff the PA has been activating for the progress deadline + 30 s
    (630 s and 750 s: given up; 840 s and 1230 s: the PA turns Active). The fixed 630 s gave up in all four."""
    log = _reviewers_repro(monkeypatch, deadline)
    start, dropped, ready = _activation(log)
    if gives_up:   # at the tick the pod's first metrics arrive (the pod is deleted in that tick)
        assert dropped is not None and 780.0 < dropped - start < 800.0
        assert all(replicas > 0 for t, _, replicas, _ in log if start < t < dropped)
    else:
        assert dropped is None and ready is not None and 780.0 < ready - start < 800.0
        assert next(state for t, state, *_ in log if t >= ready) == "active"


def test_initial_scale_counts_for_the_active_condition_until_reached(scn, tmp_path, monkeypatch):
    """initial-scale 3 from zero pods, one on a warm node and two on nodes still to provision: the PA stays
    Activating while 1 or 2 pods are Ready and turns Active with 3 (kpa.go activeThreshold before the scale
    target is initialized; the old threshold, max(min-scale, 1), made it Active with the first pod)."""
    cluster = {"gpus_per_node": 1, "max_nodes": 3, "warm_nodes": 1, "node_provision_s": 60, "image_gib": 0,
               "warmup_s": 1}
    log = _ticks(scn, tmp_path, monkeypatch, {"autoscaling.knative.dev/initial-scale": "3"}, cluster, 400.0)
    first_active = next(i for i, (_, state, *_) in enumerate(log) if state == "active")
    assert log[first_active][3] == 3
    assert sum(1 for _, state, _, ready in log[:first_active] if state == "activating" and ready == 1) > 10

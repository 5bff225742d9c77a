"""The PodAutoscaler's activation, against knative/serving `pkg/reconciler/autoscaling/kpa`:
- `scaler.go: handleScaleToZero`: an activation that has not made the PA Active within the progress deadline +
  30 s scales back to 0; the deadline is the revision's `serving.knative.dev/progress-deadline` (copied onto the
  PA, `PodAutoscaler.ProgressDeadline`), else config-deployment's 600 s;
- `kpa.go: activeThreshold`: the PA is Active once max(min-scale, initial-scale) pods are Ready until the scale
  target has been initialized, max(min-scale, 1) after.
"""

from __future__ import annotations

import pytest

from simulation.autoscaler.loop import KpaLoop

DEADLINE = "serving.knative.dev/progress-deadline"


COLD = {"gpus_per_node": 1, "max_nodes": 3, "node_provision_s": 100, "image_gib": 6, "image_pull_mib_s": 20,
        "model_download_mib_s": 20, "load_gib_s": 1.5, "warmup_s": 10, "model_cache": "none"}   # ~13 minutes


def _ticks(scn, tmp_path, monkeypatch, annotations: dict, cluster: dict = COLD, duration: float = 1500.0,
           initial_replicas: int = 0, **top) -> list[tuple]:
    """(time, PA state, replicas, Ready pods) after every KPA tick of a scale-from-zero run."""
    log: list[tuple] = []
    tick = KpaLoop.tick

    def logged(self):
        tick(self)
        log.append((self.env.now, self.state, self.sim.replicas, len(self.sim.endpoints)))

    monkeypatch.setattr(KpaLoop, "tick", logged)
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


@pytest.mark.parametrize("deadline, timeout", [(None, 630.0), ("300s", 330.0), ("5m30s", 360.0)])
def test_an_activation_past_the_progress_deadline_scales_back_to_zero(scn, tmp_path, monkeypatch, deadline,
                                                                      timeout):
    """A ~13-minute cold start: with no annotation (600 s) or a shorter one, the KPA gives up at the deadline
    + 30 s, at the first tick from then on (ticks every 2 s), before any pod is Ready."""
    log = _ticks(scn, tmp_path, monkeypatch, {DEADLINE: deadline} if deadline else {})
    start, dropped, ready = _activation(log)
    assert dropped is not None and start + timeout <= dropped < start + timeout + 2.0
    assert ready is None or ready > dropped
    assert all(replicas > 0 for t, _, replicas, _ in log if start < t < dropped)


def _reviewers_repro(monkeypatch, deadline: str) -> list[tuple]:
    """/tmp/rev-sim/pd.yaml: sparse Poisson traffic to a scaled-to-zero service whose pod takes ~790 s to turn
    Ready (between two ticks); every request gives up first (revision timeout 300 s)."""
    from simulation import load_scenario, run_simulation

    log: list[tuple] = []
    tick = KpaLoop.tick

    def logged(self):
        tick(self)
        log.append((self.env.now, self.state, self.sim.replicas, len(self.sim.endpoints)))

    monkeypatch.setattr(KpaLoop, "tick", logged)
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


def test_a_progress_deadline_above_the_cold_start_keeps_the_activation_until_ready(monkeypatch):
    """The reviewer's repro under `progress-deadline: 1200s`: the activation at ~272 s is not given up; the pod
    turns Ready ~790 s later and the PA turns Active (the fixed 630 s scaled it to zero right then)."""
    start, dropped, ready = _activation(_reviewers_repro(monkeypatch, "1200s"))
    assert dropped is None and ready is not None and 630.0 < ready - start < 1230.0


def test_the_same_cold_start_under_the_default_deadline_is_given_up_at_630_s(monkeypatch):
    """The same run with `progress-deadline: 600s` (Knative's default): given up 630 s after activating, with no
    metrics yet (no Ready pod, every request gone): scaler.go applyBounds lifts the no-data −1 to min-scale 0."""
    start, dropped, ready = _activation(_reviewers_repro(monkeypatch, "600s"))
    assert dropped is not None and start + 630.0 <= dropped < start + 632.0 and (ready is None or ready > dropped)


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

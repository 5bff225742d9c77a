"""The simulated download phase is the model's `download_gib` (an hf:// repository whole, as the stack's gate scenario
states it: gate.scenario_for), the load phase its `weights_gib`; without `download_gib` the download is the weights."""

from __future__ import annotations

import pytest

CLUSTER = {"gpus_per_node": 1, "max_nodes": 1, "warm_nodes": 0, "node_provision_s": 100, "image_gib": 10,
           "image_pull_mib_s": 100, "model_download_mib_s": 500, "load_gib_s": 2, "warmup_s": 20,
           "activator_probe_s": 0.2}


def _phases(tmp_path, scn, model: dict) -> dict:
    trace = tmp_path / "one.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n")
    d = scn.run({
        "inferenceService": scn.isvc(cc=1, min_replicas=0, max_replicas=1,
                                     annotations={"autoscaling.knative.dev/target-utilization-percentage": "100"}),
        "workload": {"kind": "trace", "path": str(trace)},
        "cluster": CLUSTER,
        "model": {"name": "m", **model},
        "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"},
        "initial_replicas": 0,
        "duration_s": 600,
    })
    assert d["status_counts"] == {"200": 1} and d["cold_starts"] == 1
    return d["cold_start_phases_mean_s"]


def test_the_download_is_the_repository_and_the_load_the_weights(tmp_path, scn):
    weights = _phases(tmp_path, scn, {"weights_gib": 15})
    repo = _phases(tmp_path, scn, {"weights_gib": 15, "download_gib": 30})
    assert weights["download_s"] == pytest.approx(15 * 1024 / 500)
    assert repo["download_s"] == pytest.approx(30 * 1024 / 500)
    assert repo["load_s"] == weights["load_s"] == pytest.approx(15 / 2)


def test_the_stack_scenario_states_the_repository_for_hf_only():
    from dataclasses import replace

    from gate import scenario_for
    from stackconfig.load import load_stack

    cfg = load_stack("prod")
    chat = cfg.services[0]
    assert chat.storage_uri.startswith("hf://")
    model = scenario_for(cfg, chat)["model"]
    assert model == {"name": "llama-3-8b", "weights_gib": 14.957, "download_gib": 30.0}
    s3 = replace(chat, storage_uri="s3://models/llama-3-8b/")
    assert "download_gib" not in scenario_for(cfg, s3)["model"]


@pytest.mark.parametrize("value", [-1, "big"])
def test_download_gib_is_checked(scn, value):
    from validation.errors import InputError

    with pytest.raises(InputError, match="model.download_gib.*expected a number >= 0"):
        scn.run({"inferenceService": scn.isvc(), "workload": {"kind": "poisson", "rate": 1.0},
                 "model": {"name": "m", "weights_gib": 1, "download_gib": value}, "duration_s": 10})

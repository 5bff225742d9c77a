"""The typed stack config on its own: defaults, derived values and the pure helpers."""

from __future__ import annotations

import math

import pytest

from catalog import DEFAULT
from simulation.dists import Dist
from validation.errors import InputError
from stackconfig.load import load_stack, project_values, stack_config_values
from stackconfig.services import default_startup_failures
from stackconfig.schema import (ColdStartProfile, Taint, Toleration, expected_load_s,
                                parse_stack_config)

MINIMAL = {
    "cluster": {"name": "c", "subnetIds": ["subnet-0a1b2c3d"], "createNodeRole": True},
    "services": [{"name": "chat", "maxReplicas": 2,
                  "model": {"name": "llama-3-8b", "storageUri": "hf://m/l", "public": True}}],
}


@pytest.mark.parametrize("toleration, tolerated", [
    (Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule"), True),
    (Toleration("nvidia.com/gpu", "Exists", None, "NoSchedule"), True),
    (Toleration("nvidia.com/gpu", "Exists", None, None), True),
    (Toleration("", "Exists", None, None), True),  # empty key + Exists tolerates everything
    (Toleration("nvidia.com/gpu", "Equal", "false", "NoSchedule"), False),
    (Toleration("nvidia.com/gpu", "Equal", "true", "NoExecute"), False),
    (Toleration("dedicated", "Exists", None, None), False),
])
def test_toleration_semantics_follow_kubernetes(toleration, tolerated):
    assert toleration.tolerates(Taint("nvidia.com/gpu", "true", "NoSchedule")) is tolerated


def test_minimal_config_gets_kserve_and_safe_defaults():
    cfg = parse_stack_config(MINIMAL, "kserve-preflight", "dev")
    [svc] = cfg.services
    assert svc.min_replicas == 1  # KServe DefaultMinReplicas
    assert svc.deployment_mode == "Knative" and svc.scale_metric == "concurrency"
    assert cfg.node_group.taints == [Taint("nvidia.com/gpu", "true", "NoSchedule")]
    assert [t.to_manifest() for t in svc.tolerations] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert cfg.node_group.ami_type == "AL2023_x86_64_NVIDIA"
    assert cfg.node_group.gpu.name == "L40S" and cfg.node_group.gpus_per_node == 1
    assert svc.pytorch_cuda_alloc_conf == "expandable_segments:True"


def test_legacy_deployment_mode_names_are_accepted():
    cfg = dict(MINIMAL, services=[dict(MINIMAL["services"][0], deploymentMode="RawDeployment", scaleMetric="cpu")])
    assert parse_stack_config(cfg, "p", "dev").services[0].deployment_mode == "Standard"


def test_expected_load_time_adds_download_only_on_a_cache_miss():
    model = DEFAULT.models["llama-3-8b"]
    cold = ColdStartProfile(node_provision_s=Dist("fixed", 0), image_gib=0, image_pull_mbps=Dist("fixed", 1),
                            download_gbps=Dist("fixed", 0.5), load_gbps=Dist("fixed", 2.0),
                            engine_init_s=Dist("fixed", 30))
    gb = model.weights_bytes / 1e9
    assert expected_load_s(model, cold, cache_hit=True) == pytest.approx(gb / 2.0 + 30)
    assert expected_load_s(model, cold, cache_hit=False) == pytest.approx(gb / 0.5 + gb / 2.0 + 30)


def test_expected_load_time_takes_each_prior_at_its_95th_percentile_not_its_mean():
    """A throughput at its 5th percentile (the slow end), a duration at its 95th: a probe or a wait sized from
    the mean would cut off the slow half of the cold starts."""
    model = DEFAULT.models["llama-3-8b"]
    cold = ColdStartProfile(node_provision_s=Dist("fixed", 0), image_gib=0, image_pull_mbps=Dist("fixed", 1),
                            download_gbps=Dist("uniform", 0.5, 2.5), load_gbps=Dist("lognormal", 2.0, 0.4),
                            engine_init_s=Dist("uniform", 10, 60))
    gb = model.weights_bytes / 1e9
    slow_load = 2.0 * math.exp(-0.4 * 1.6448536269514722)
    assert expected_load_s(model, cold, cache_hit=True) == pytest.approx(gb / slow_load + 57.5)
    assert expected_load_s(model, cold, cache_hit=False) == pytest.approx(gb / 0.6 + gb / slow_load + 57.5)


def test_startup_probe_budget_is_sized_from_the_load_time():
    for stack in ("dev", "staging", "prod"):
        for svc in load_stack(stack).services:
            budget = svc.startup_probe.period_s * svc.startup_probe.failure_threshold
            assert 2 * svc.expected_load_s <= budget <= 2 * svc.expected_load_s + svc.startup_probe.period_s


def test_user_catalog_entries_extend_the_built_in_tables():
    cfg = dict(MINIMAL, catalog={
        "models": {"my-3b": {"paramsB": 3.2, "layers": 28, "kvHeads": 8, "headDim": 128, "maxContext": 8192,
                             "hiddenSize": 3072, "vocabSize": 128256}},
        "instanceTypes": {"x9.gpu": {"gpu": "H100-80GB", "gpus": 2}}},
        gpuNodeGroup={"instanceTypes": ["x9.gpu"], "maxSize": 2}, modelCache={"serviceAccountName": "b-reader"},
        services=[dict(MINIMAL["services"][0], model={"name": "my-3b", "storageUri": "s3://b/m"})])
    parsed = parse_stack_config(cfg, "p", "dev")
    assert parsed.services[0].model.kv_bytes_per_token == 2 * 28 * 8 * 128 * 2
    assert (parsed.services[0].model.hidden_size, parsed.services[0].model.vocab_size) == (3072, 128256)
    assert parsed.node_group.gpus_per_node == 2 and parsed.node_group.gpu.name == "H100-80GB"


def test_user_instance_type_with_unknown_gpu_is_refused():
    cfg = dict(MINIMAL, catalog={"instanceTypes": {"x9.gpu": {"gpu": "B300", "gpus": 2}}})
    with pytest.raises(InputError, match="catalog.instanceTypes.x9.gpu.gpu: got 'B300'"):
        parse_stack_config(cfg, "p", "dev")


def test_mixed_node_shapes_are_refused():
    cfg = dict(MINIMAL, gpuNodeGroup={"instanceTypes": ["g6e.xlarge", "g5.xlarge"]})
    with pytest.raises(InputError, match="same GPU model and count per node"):
        parse_stack_config(cfg, "p", "dev")


def test_yaml_loader_merges_like_the_cli():
    project, values = stack_config_values("prod")
    assert project == "kserve-preflight"
    assert values["aws:region"] == "us-west-2"
    assert set(project_values(values, project)) >= {"cluster", "gpuNodeGroup", "services"}
    # The CLI passes objects as JSON strings; the loader decodes them the same way.
    assert project_values({"kserve-preflight:cluster": '{"name": "x"}'}, project) == {"cluster": {"name": "x"}}


def test_tgi_gets_its_own_health_path_and_port():
    from stackconfig.server_args import engine_args

    cfg = dict(MINIMAL, services=[dict(MINIMAL["services"][0], runtime={
        "engine": "tgi", "image": "ghcr.io/huggingface/text-generation-inference:3.3.4"},
        limits={"maxInputTokens": 4096, "maxNewTokens": 1024, "maxBatchSize": 32})])
    svc = parse_stack_config(cfg, "p", "dev").services[0]
    assert {svc.startup_probe.path, svc.readiness_probe.path, svc.liveness_probe.path} == {"/health"}
    assert engine_args(svc)[:2] == ["--port=8080", "--model-id=/mnt/models"]
    assert "--max-total-tokens=5120" in engine_args(svc) and "--max-batch-size=32" in engine_args(svc)


def _tgi(limits: dict, engine: str = "tgi") -> dict:
    image = {"tgi": "ghcr.io/huggingface/text-generation-inference:3.3.4"}.get(engine)
    runtime = {"engine": engine, **({"image": image} if image else {})}
    return dict(MINIMAL, services=[dict(MINIMAL["services"][0], runtime=runtime, limits=limits,
                                        resources={"cpu": "2", "memory": "16Gi"},   # fits a g6e.xlarge
                                        workload={"kind": "poisson", "rate": 1.0})])


def test_tgi_admission_limit_is_its_launcher_flag_and_what_the_gate_simulates():
    """limits.maxConcurrentRequests → `--max-concurrent-requests` (TGI's router answers 429 above it), read back
    from the rendered InferenceService by the simulation (no second copy of the knob)."""
    from gate import scenario_for
    from stackconfig.server_args import engine_args
    from simulation import load_scenario

    cfg = parse_stack_config(_tgi({"maxBatchSize": 32, "maxConcurrentRequests": 48}), "p", "dev")
    svc = cfg.services[0]
    assert "--max-concurrent-requests=48" in engine_args(svc)
    sc = load_scenario(scenario_for(cfg, svc))
    assert sc.server.spec.max_concurrent_requests == 48
    default = parse_stack_config(_tgi({"maxBatchSize": 32}), "p", "dev")
    assert not any(a.startswith("--max-concurrent-requests") for a in engine_args(default.services[0]))
    assert load_scenario(scenario_for(default, default.services[0])).server.spec.max_concurrent_requests == 128


@pytest.mark.parametrize("engine, value, message", [
    ("vllm", 48, "expected only with runtime.engine tgi"),
    ("tgi", 0, "expected an integer between 1 and 1000000"),
])
def test_max_concurrent_requests_is_tgi_only_and_positive(engine, value, message):
    with pytest.raises(InputError) as err:
        parse_stack_config(_tgi({"maxConcurrentRequests": value}, engine), "p", "dev")
    text = str(err.value)
    assert "limits.maxConcurrentRequests" in text and str(value) in text and message in text


@pytest.mark.parametrize("engine, limits, user_arg", [
    ("tgi", {"maxBatchSize": 32, "maxConcurrentRequests": 64}, "--max-concurrent-requests=4"),  # clap refuses it
    ("vllm", {"maxBatchSize": 16}, "--max-num-seqs=4"),        # vLLM's argparse would keep 4, the gate read 16
])
def test_a_flag_the_stack_renders_cannot_be_given_again_in_runtime_args(engine, limits, user_arg):
    from manifests.admission import check_pods_can_run

    cfg = _tgi(limits, engine)
    cfg["services"][0]["runtime"]["args"] = [user_arg]
    with pytest.raises(InputError) as err:   # at load, before anything else
        parse_stack_config(cfg, "p", "dev")
    assert f"services[0].runtime.args: got '{user_arg}'" in str(err.value)
    assert "the stack renders" in str(err.value)
    cfg["services"][0]["runtime"]["args"] = ["--enable-prefix-caching"] if engine == "vllm" else ["--sharded=false"]
    check_pods_can_run(parse_stack_config(cfg, "p", "dev"))     # control: a flag the stack does not render


@pytest.mark.parametrize("load_s,failures", [(0.0, 6), (29.9, 6), (30.0, 7), (100.0, 21), (299.9, 60)])
def test_the_default_startup_threshold_is_twice_the_load_in_10_s_periods(load_s, failures):
    """At least 6, else enough 10 s periods for twice the expected load: the one formula both the first reading
    and the first-deploy sizing of a service use (stackconfig/services.py)."""
    assert default_startup_failures(load_s) == failures

"""Tests that kill mutants of this session's new code which survived the suite (review 12, mutation testing): the
rollout check's old-revision load and Standard-mode surge, Triton's port collision, version gate and restated
values, the swap bound's node memory, V0's swap default, and the serving-memory policy's boundary."""

from __future__ import annotations

import copy

from gate.rollout_capacity import rollout_problems
from simulation.engine_flags import node_memory_gib
from simulation.engine_flags_triton import triton_reading
from catalog import DEFAULT
from policy.rules import RULES_BY_ID, evaluate
from policy_fixtures import FIXTURES, Stack, shipped
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config


def test_triton_grpc_on_the_metrics_port_is_refused():          # kills T4
    problems, ports = triton_reading(["--grpc-port=8002"])
    assert problems and "CheckPortCollision" in problems[0][1] and ports == []


def test_triton_flag_is_accepted_on_the_release_that_added_it():  # kills T1
    assert triton_reading(["--enable-peer-access=true"], "nvcr.io/nvidia/tritonserver:24.06-py3")[0] == []
    assert triton_reading(["--enable-peer-access=true"], "nvcr.io/nvidia/tritonserver:24.05-py3")[0]


def test_swap_bound_uses_the_smallest_instance():               # kills R10
    small, big = node_memory_gib([DEFAULT.instances["g5.2xlarge"]]), node_memory_gib([DEFAULT.instances["g5.12xlarge"]])
    assert small < big and node_memory_gib([DEFAULT.instances["g5.12xlarge"], DEFAULT.instances["g5.2xlarge"]]) == small


def _cfg(mode, min_replicas, max_size):
    project, values = stack_config_values("dev", stack_dir=FIXTURES)
    values = copy.deepcopy(project_values(values, project))
    svc = values["services"][0]
    svc["deploymentMode"] = mode
    if mode == "Standard":
        for k in ("containerConcurrency", "timeout", "annotations"):
            svc.pop(k, None)
    svc["minReplicas"] = min_replicas
    svc["maxReplicas"] = min(max_size, max(min_replicas, 4))
    values["gpuNodeGroup"]["maxSize"] = max_size
    return parse_stack_config(values, project, "dev", "test")


def test_knative_old_revision_is_at_least_min_replicas():       # kills RC1
    cfg = _cfg("Knative", 2, 3)
    svc = cfg.services[0]
    [p] = rollout_problems(cfg, {svc.name: 0.3})
    assert "old revision at 2 pod(s)" in p.allowed, p.allowed


def test_standard_rollout_uses_the_simulated_load():            # kills RC4
    cfg = _cfg("Standard", 1, 4)
    svc = cfg.services[0]
    assert rollout_problems(cfg, {svc.name: 1.0}) == []
    assert rollout_problems(cfg, {svc.name: 3.5})             # 4 running + 1 surge > 4 nodes' GPUs


def test_every_spelling_of_counter_latencies_off_is_refused():   # kills T10
    for value in ("false", "off", "0", "OFF"):
        assert triton_reading([f"--metrics-config=counter_latencies={value}"])[0], value


def test_http_max_input_size_restating_the_default_is_accepted():   # kills T11
    assert triton_reading(["--http-max-input-size=67108864"], "nvcr.io/nvidia/tritonserver:25.06-py3")[0] == []


def test_standard_surge_rounds_up():                              # kills RC6
    cfg = _cfg("Standard", 1, 1)
    [p] = rollout_problems(cfg, {cfg.services[0].name: 1.0})      # 1 running + ceil(0.25) = 1 surge > 1 GPU
    assert "1 surge pod(s)" in p.allowed


def test_v0_swap_space_at_the_default_is_accepted():             # kills R4
    from simulation.engine_flag_tables import HF_VLLM
    from simulation.engine_flags import Pod, read_args, restated_problems

    reading = read_args(HF_VLLM, ["--swap-space=4"])
    assert restated_problems(reading, {}, Pod(gpus=1, mode="Knative", scheduler="v0")) == []
    assert restated_problems(read_args(HF_VLLM, ["--swap-space=4.5"]), {}, Pod(gpus=1, mode="Knative", scheduler="v0"))


def _memory_findings(limits: dict | None, requests: dict | None) -> list[str]:
    s = Stack(shipped("prod"))
    resources = s.model("code-isvc")["resources"]
    resources.pop("limits", None) if limits is None else resources["limits"].update(limits)
    if requests is not None:
        resources["requests"] = {**resources.get("requests", {}), **requests}
    return [v.message for v in evaluate(s.resources, [RULES_BY_ID["isvc-serving-memory"]])]


def test_the_serving_memory_policy_takes_2gi_and_reads_requests_without_limits():   # kills P1, P2
    assert _memory_findings({"memory": "2Gi"}, None) == []
    assert _memory_findings(None, {"memory": "1536Mi"}) and _memory_findings({"memory": "1536Mi"}, None)


def test_a_standard_mode_service_has_no_revision_timeout():     # kills M1
    from manifests.inference_service import revision_timeout_s

    assert revision_timeout_s(_cfg("Standard", 1, 4).services[0]) is None   # no Knative revision, no queue-proxy

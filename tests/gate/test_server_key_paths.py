"""The start-up problems of a server setting name the stack key the user wrote, its value and what is allowed
(gate/startup.py `server_key`; session 13: they named the gate's `services[i]/server.<key>`, a key no stack file
has). The same holds for the gate's own fleet check (gate `_validate`)."""

from __future__ import annotations

import pytest

import gate
from gate.startup import server_key, start_problems
from runtime_stack import chat_stack, with_service
from stackconfig.schema import parse_stack_config
from validation.errors import InputError, Problem


def _cfg(runtime: dict, **service):
    values = with_service(chat_stack(), {"engine": "vllm", **runtime}, **service)
    return parse_stack_config(values, "p", "dev")


@pytest.mark.parametrize("runtime, limits, path, value, says", [
    ({"args": ["--max-num-seqs=10000"]}, None, "services[0].runtime.args", "--max-num-seqs=10000",
     "expected a max_num_seqs the server starts with: its max_num_batched_tokens is 2048 (its default"),
    ({}, {"maxBatchSize": 4096}, "services[0].limits.maxBatchSize", 4096, "at least max_num_seqs (4096)"),
    ({"env": {"VLLM_USE_V1": "0"}, "args": ["--max-num-batched-tokens=1024"]}, None, "services[0].runtime.args",
     "--max-num-batched-tokens=1024", "expected at least max_model_len (8192)"),
], ids=["flag-behind-a-default", "limits-behind-a-default", "own-flag"])
def test_a_step_budget_the_server_refuses_is_named_at_the_key_that_set_it(runtime, limits, path, value, says):
    cfg = _cfg(runtime, **({"limits": limits} if limits else {}))
    [problem] = start_problems(cfg)
    assert (problem.path, problem.value) == (path, value) and says in problem.allowed, problem
    assert "server." not in problem.path


def test_the_gates_fleet_check_names_the_same_key():
    cfg = _cfg({"env": {"VLLM_USE_V1": "0"}, "args": ["--max-num-batched-tokens=1024"]}, slo={"p99LatencyS": 400})
    [scenario] = gate.stack_scenarios(cfg, ("steady",))
    with pytest.raises(InputError) as err:
        gate._validate(cfg, scenario)
    assert [(p.path, p.value) for p in err.value.problems] == \
        [("p:services[0].runtime.args", "--max-num-batched-tokens=1024")]


@pytest.mark.parametrize("runtime, service, key, server_value, path, value", [
    ({}, {"limits": {"maxInputTokens": 4096, "maxNewTokens": 1024}}, "max_model_len", 5120, "services[0].limits",
     {"maxInputTokens": 4096, "maxNewTokens": 1024}),
    ({"args": ["--max-model-len=6000"]}, {}, "max_model_len", 6000, "services[0].runtime.args", "--max-model-len=6000"),
    ({"engine": "tgi", "env": {"MAX_BATCH_PREFILL_TOKENS": "4096"}}, {}, "max_num_batched_tokens", 4096,
     "services[0].runtime.env.MAX_BATCH_PREFILL_TOKENS", "4096"),
    ({}, {"resources": {"gpus": 2, "cpu": "8", "memory": "48Gi"}}, "tensor_parallel_size", 2,
     "services[0].resources.gpus", 2),
    ({}, {"gpuMemoryUtilization": 0.8}, "gpu_memory_utilization", 0.8, "services[0].gpuMemoryUtilization", 0.8),
    ({}, {"engineProfile": {"activationGib": 3.0}}, "activation_gib", 3.0, "services[0].engineProfile.activationGib",
     3.0),
    ({}, {}, "instance_type", "g6e.12xlarge", "gpuNodeGroup.instanceTypes", ["g6e.12xlarge"]),
], ids=["limits-context", "flag-context", "tgi-env", "gpus", "utilization", "engine-profile", "instance-type"])
def test_each_server_key_goes_to_the_stack_key_that_sets_it(runtime, service, key, server_value, path, value):
    problem = server_key(_cfg(runtime, **service), 0, Problem(f"server.{key}", server_value, "expected less"))
    assert (problem.path, problem.value) == (path, value)
    assert problem.allowed.startswith("expected less")


def test_a_value_the_stack_renders_differently_shows_the_servers_value_too():
    cfg = _cfg({}, limits={"maxInputTokens": 4096, "maxNewTokens": 1024})
    problem = server_key(cfg, 0, Problem("server.max_model_len", 5120, "expected at most 4096"))
    assert problem.allowed == "expected at most 4096 (the server's max_model_len: 5120)"


def test_a_catalog_field_goes_to_the_stacks_catalog_key():
    problem = server_key(_cfg({}), 0, Problem("server.catalog.models.mine.head_dim", None, "expected a number"))
    assert (problem.path, problem.value) == ("catalog.models.mine.headDim", None)


def test_a_setting_no_key_sets_goes_to_runtime_args_saying_it_is_the_servers_default():
    cfg = _cfg({"args": ["--enable-prefix-caching"]})
    problem = server_key(cfg, 0, Problem("server.block_size", 16, "expected 32"))
    assert (problem.path, problem.value) == ("services[0].runtime.args", ["--enable-prefix-caching"])
    assert problem.allowed == ("expected a flag that sets the server's block_size, now 16 (its default: no key of "
                               "this service sets it): for block_size the server expected 32")

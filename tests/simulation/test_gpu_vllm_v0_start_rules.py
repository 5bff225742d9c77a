"""vLLM's V0 engine (`scheduler: v0`, `VLLM_USE_V1=0`) at start-up (review rev12-runtimes F5 and F7).

F5: `SchedulerConfig._verify_args` (vllm/config.py, 0.6–0.10) raises ValueError when max_num_batched_tokens is below
max_model_len without chunked prefill ("max_num_batched_tokens (4096) is smaller than max_model_len (5120)") and
when it is below max_num_seqs. F7: `EngineArgs._set_default_args_v0` (vllm/engine/arg_utils.py, 0.8–0.10) turns
chunked prefill on for max_model_len > 32768 unless the model has a sliding window; the budget is then 2048 tokens
(`SchedulerConfig.__post_init__`), and the profiling pass runs over those 2048 tokens, not the whole context.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

import gpu_fakes
from catalog import DEFAULT
from gate import scenario_for
from simulation import load_scenario
from simulation.gpu.memory import vllm_budget
from simulation.gpu.vllm_spec import V0_LONG_CONTEXT, v0_chunks
from simulation.gpu.vllm_v0 import VllmV0Engine
from simulation.gpu.vllm_v1 import VllmV1Engine
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from runtime_stack import chat_stack, refused

MODELS, GPUS = DEFAULT.models, DEFAULT.gpus
V0 = {"model": "llama-3-8b", "gpu": "L40S", "scheduler": "v0"}


# --- F5: V0's budget must hold max_model_len (without chunked prefill) and max_num_seqs --------------------------
def test_a_v0_budget_below_max_model_len_is_refused():
    spec, problems = gpu_fakes.spec_of("vllm", {**V0, "max_model_len": 5120, "max_num_batched_tokens": 4096})
    assert [(p.path, p.value) for p in problems] == [("server.max_num_batched_tokens", 4096)]
    assert "expected at least max_model_len (5120)" in problems[0].allowed
    assert "'max_num_batched_tokens (4096) is smaller than max_model_len (5120)'" in problems[0].allowed
    spec, problems = gpu_fakes.spec_of("vllm", {**V0, "max_model_len": 5120, "max_num_batched_tokens": 5120})
    assert problems == [] and not spec.chunked_prefill   # control: equal is enough


def test_a_v0_budget_below_max_num_seqs_is_refused_as_v1s_is():
    for scheduler in ("v0", "v1"):
        spec, problems = gpu_fakes.spec_of("vllm", {**V0, "scheduler": scheduler, "max_model_len": 2048,
                                                    "max_num_seqs": 4096})
        assert [(p.path, p.value) for p in problems] == [("server.max_num_batched_tokens", 2048)], scheduler
        assert "expected at least max_num_seqs (4096)" in problems[0].allowed


def test_v1_still_takes_a_budget_below_max_model_len():
    spec, problems = gpu_fakes.spec_of("vllm", {**V0, "scheduler": "v1", "max_model_len": 5120,
                                                "max_num_batched_tokens": 4096})
    assert problems == [] and spec.chunked_prefill


def _stack(runtime: dict, **service) -> dict:
    cfg = chat_stack(**service)
    cfg["services"][0]["runtime"] = copy.deepcopy(runtime)
    return cfg


def test_a_stack_on_v0_with_a_budget_below_its_context_fails_in_the_gate():
    """r9_cli_v0_budget.out: dev + VLLM_USE_V1=0 on huggingfaceserver:v0.15.2-gpu + --max-num-batched-tokens=4096,
    a 4096 + 1024 context: the gate's scenario is refused where it passed."""
    runtime = {"engine": "vllm", "image": "kserve/huggingfaceserver:v0.15.2-gpu", "env": {"VLLM_USE_V1": "0"},
               "args": ["--max-num-batched-tokens=4096"]}
    stack = parse_stack_config(_stack(runtime, limits={"maxInputTokens": 4096, "maxNewTokens": 1024}), "p", "dev")
    with pytest.raises(InputError) as err:
        load_scenario(scenario_for(stack, stack.services[0]))
    assert "server.max_num_batched_tokens: got 4096; expected at least max_model_len (5120)" in str(err.value)
    ok = parse_stack_config(_stack(runtime, limits={"maxInputTokens": 3072, "maxNewTokens": 1024}), "p", "dev")
    assert load_scenario(scenario_for(ok, ok.services[0])).server.spec.max_num_batched_tokens == 4096


# --- F7: V0 chunks prefills by default above a 32K context -------------------------------------------------------
def test_v0_above_32k_chunks_with_a_2048_token_budget_and_profiles_2048_tokens():
    """r3_v0_long_context.py: llama-3.1-8b (131,072 tokens) on one L40S under V0 starts with chunked prefill."""
    m = MODELS["llama-3.1-8b"]
    assert v0_chunks(m, m.max_context) and m.max_context > V0_LONG_CONTEXT
    spec, problems = gpu_fakes.spec_of("vllm", {**V0, "model": "llama-3.1-8b"})
    assert problems == [] and spec.chunked_prefill
    assert (spec.max_num_batched_tokens, spec.max_num_seqs, spec.max_model_len) == (2048, 256, m.max_context)
    expected = vllm_budget(GPUS["L40S"], m, max_model_len=m.max_context, max_num_batched_tokens=2048,
                           max_num_seqs=256, window_rule="window")
    assert spec.budget == expected and spec.budget.can_start
    whole = vllm_budget(GPUS["L40S"], m, max_model_len=m.max_context, max_num_batched_tokens=m.max_context)
    assert whole.activation_bytes > 10 * spec.budget.activation_bytes   # what the project profiled before
    env, pod, server = gpu_fakes.make("vllm", {**V0, "model": "llama-3.1-8b"})
    assert isinstance(server, VllmV1Engine) and server.startup_error() is None
    # a budget of the user's below the context is fine once V0 chunks
    spec, problems = gpu_fakes.spec_of("vllm", {**V0, "model": "llama-3.1-8b", "max_num_batched_tokens": 4096})
    assert problems == [] and spec.max_num_batched_tokens == 4096


def test_v0_at_32k_or_with_a_sliding_window_does_not_chunk():
    spec, problems = gpu_fakes.spec_of("vllm", {**V0, "model": "llama-3.1-8b", "max_model_len": V0_LONG_CONTEXT})
    assert problems == [] and not spec.chunked_prefill and spec.max_num_batched_tokens == V0_LONG_CONTEXT
    env, pod, server = gpu_fakes.make("vllm", {**V0, "model": "llama-3.1-8b", "max_model_len": 8192})
    assert isinstance(server, VllmV0Engine)
    windowed = replace(MODELS["mistral-7b-v0.1"], max_context=65536)   # get_sliding_window() is not None
    assert windowed.sliding_window and not v0_chunks(windowed, 65536)
    assert v0_chunks(replace(windowed, sliding_window=0), 65536)


def test_a_v0_stack_above_32k_refuses_turning_the_default_chunking_off():
    """`--no-enable-chunked-prefill` on V0 above 32K would prefill and profile the whole context, which the gate
    does not simulate; at 32K or below it restates V0's default and loads."""
    long = {"name": "llama-3.1-8b", "storageUri": "hf://m/l", "public": True}
    runtime = {"engine": "vllm", "env": {"VLLM_USE_V1": "0"}, "args": ["--no-enable-chunked-prefill"]}
    text = refused(_stack(runtime, model=long))
    assert "services[0].runtime.args: got '--no-enable-chunked-prefill'; expected no --no-enable-chunked-prefill" \
        in text and "llama-3.1-8b at 131072" in text
    ok = parse_stack_config(_stack(runtime, model=long, limits={"maxInputTokens": 16384, "maxNewTokens": 1024}),
                            "p", "dev")
    spec = load_scenario(scenario_for(ok, ok.services[0])).server.spec
    assert not spec.chunked_prefill and spec.max_num_batched_tokens == 17408
    default = parse_stack_config(_stack({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}}, model=long), "p", "dev")
    spec = load_scenario(scenario_for(default, default.services[0])).server.spec
    assert spec.scheduler == "v0" and spec.chunked_prefill and spec.max_num_batched_tokens == 2048


def test_a_v0_stack_above_32k_may_restate_its_default_chunking():
    """Review 12: `--enable-chunked-prefill` on V0 above 32K restates what V0 does there (and what the gate
    simulates); it was refused with "the V0 simulation never chunks"."""
    long = {"name": "llama-3.1-8b", "storageUri": "hf://m/l", "public": True}
    cfg = parse_stack_config(_stack({"engine": "vllm", "env": {"VLLM_USE_V1": "0"},
                                     "args": ["--enable-chunked-prefill"]}, model=long), "p", "dev")
    spec = load_scenario(scenario_for(cfg, cfg.services[0])).server.spec
    assert spec.scheduler == "v0" and spec.chunked_prefill and spec.max_num_batched_tokens == 2048


def test_calibrating_a_v0_log_above_32k_profiles_the_chunked_budget():
    """A V0 start-up log at a 131,072-token context came from an engine that profiled its 2,048-token chunked
    budget; the calibration's prior profiled the whole context (12.99 GiB of activation, a negative remainder)."""
    from catalog import DEFAULT
    from simulation.calibrate.vllm_log import LogFacts, calibrate

    facts = LogFacts(version="0.8.5", utilization=0.9, gpu_blocks=12000, max_model_len=131072)
    assert facts.scheduler == "v0"
    cal = calibrate(facts, DEFAULT.models["llama-3.1-8b"], DEFAULT.gpus["L40S"])
    assert any("profiling 2048 tokens" in note for note in cal.notes), cal.notes
    assert not any("negative" in note for note in cal.notes), cal.notes

"""`runtime.env` reaches the engine: VLLM_USE_V1 picks the vLLM scheduler, TGI's launcher variables are read as
its flags, and a variable the simulation does not model is refused (simulation/engine_flags.py; review rev-engine
finding 4)."""

from __future__ import annotations

import pytest

from runtime_stack import OPENAI, refused, rt_cfg, sim_spec


# --- runtime.env reaches the engine (rev-engine finding 4) ------------------------------------------------------------
def test_vllm_use_v1_0_selects_the_v0_scheduler_where_the_image_has_one():
    # KServe 0.15: vLLM 0.8.5
    assert sim_spec(rt_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}})).scheduler == "v0"
    assert sim_spec(rt_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "1"}})).scheduler == "v1"
    old = sim_spec(rt_cfg({"engine": "vllm", "image": "vllm/vllm-openai:v0.10.1", "env": {"VLLM_USE_V1": "0"}}))
    assert old.scheduler == "v0"


@pytest.mark.parametrize("runtime, top, why", [
    ({"engine": "vllm", "image": OPENAI}, {}, "vLLM 0.11 has no V0 engine"),
    ({"engine": "vllm"}, {"kserve": {"version": "0.17"}}, "KServe 0.17's huggingfaceserver ships vLLM 0.15"),
], ids=["vllm-openai-0.11", "kserve-0.17"])
def test_vllm_use_v1_0_is_refused_where_the_vllm_has_no_v0(runtime, top, why):
    text = refused(rt_cfg({**runtime, "env": {"VLLM_USE_V1": "0"}}, **top))
    assert "services[0].runtime.env.VLLM_USE_V1: got '0'; expected 1 or no VLLM_USE_V1" in text and why in text


def test_vllm_use_v1_must_be_an_int_and_agree_with_engine_profile():
    assert "got 'false'; expected 0 or 1" in refused(rt_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "false"}}))
    cfg = rt_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}})
    cfg["services"][0]["engineProfile"] = {"scheduler": "v1"}
    assert "runtime.env.VLLM_USE_V1: got '0'; expected a value that selects engineProfile.scheduler" in refused(cfg)


def test_tgi_reads_its_launcher_variables_and_a_flag_wins_over_its_variable():
    """r07: CUDA_MEMORY_FRACTION=0.5 and MAX_BATCH_PREFILL_TOKENS=512 were ignored."""
    env = {"CUDA_MEMORY_FRACTION": "0.5", "MAX_BATCH_PREFILL_TOKENS": "512", "TGI_WIGGLE_ROOM": "0.8",
           "MAX_BATCH_SIZE": "4"}
    spec = sim_spec(rt_cfg({"engine": "tgi", "env": env, "args": ["--max-batch-size=8"]}))
    assert (spec.gpu_memory_utilization, spec.max_num_batched_tokens, spec.wiggle_room) == (0.5, 512, 0.8)
    assert spec.max_num_seqs == 8                                   # clap: the flag over MAX_BATCH_SIZE
    plain = sim_spec(rt_cfg({"engine": "tgi"}))
    assert plain.budget.kv_tokens > spec.budget.kv_tokens          # half the memory fraction: a smaller pool


@pytest.mark.parametrize("engine, name, value", [
    ("tgi", "QUANTIZE", "awq"), ("tgi", "ATTENTION", "flashinfer"), ("tgi", "MAX_INPUT_LENGTH", "1024"),
    ("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1"), ("tgi", "CUDA_MEMORY_FRACTION", "1.5"),
])
def test_an_engine_variable_the_simulation_does_not_model_is_refused(engine, name, value):
    text = refused(rt_cfg({"engine": engine, "env": {name: value}}))
    assert f"services[0].runtime.env.{name}: got '{value}'; expected" in text
    sim_spec(rt_cfg({"engine": engine, "env": {"HF_HUB_OFFLINE": "1", "NCCL_DEBUG": "WARN"}}))   # control: not settings

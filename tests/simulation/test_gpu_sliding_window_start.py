"""What a sliding-window model needs to start. vLLM V1 (`SlidingWindowSpec.max_memory_usage_bytes`,
vllm/v1/kv_cache_interface.py, v0.11.0) requires cdiv(min(window − 1 + max_num_batched_tokens, max_model_len),
block_size) + 1 blocks, more than the window alone; `scheduler: v0` keeps the window-only rule."""

import math

import pytest

import gpu_fakes
from catalog import DEFAULT
from simulation.gpu.memory import blocks_to_start, vllm_budget

MISTRAL_V01 = DEFAULT.models["mistral-7b-v0.1"]   # 4,096-token window, 32,768-token context


def _v1_need(batched, max_len, window=4096, block=16):
    return math.ceil(min(window - 1 + batched, max_len) / block) + 1


@pytest.mark.parametrize("batched, max_len, block", [(2048, 32768, 16), (8192, 32768, 16), (8192, 6000, 16),
                                                     (2048, 32768, 32), (512, 3000, 16)])
def test_v1_needs_window_minus_one_plus_the_step_budget_plus_one_block(batched, max_len, block):
    need = blocks_to_start(MISTRAL_V01, max_len, block, max_num_batched_tokens=batched)
    assert need == _v1_need(batched, max_len, block=block)
    window_only = blocks_to_start(MISTRAL_V01, max_len, block, max_num_batched_tokens=batched, window_rule="window")
    assert window_only == math.ceil(min(4096, max_len) / block) < need


def test_full_attention_is_the_same_under_both_rules():
    m = DEFAULT.models["llama-3-8b"]
    assert blocks_to_start(m, 8192, max_num_batched_tokens=2048) == blocks_to_start(
        m, 8192, max_num_batched_tokens=2048, window_rule="window") == 512


def _spec(util, scheduler="v1"):
    spec, problems = gpu_fakes.spec_of("vllm", {"model": "mistral-7b-v0.1", "gpu": "A10G",
                                                "gpu_memory_utilization": util, "scheduler": scheduler})
    assert problems == []
    return spec


def test_a_pool_between_the_window_and_v1s_need_does_not_start_under_v1():
    """The reviewer's case (rev-engine r08): on an A10G, utilizations 0.665–0.67 leave 309–365 blocks, above the
    window's 256 but below the 385 V1 needs with the A10G's 2048-token step budget."""
    for util in (0.665, 0.67):
        spec = _spec(util)
        b = spec.budget
        assert spec.max_num_batched_tokens == 2048 and b.blocks_per_max_request == _v1_need(2048, 32768) == 385
        assert 256 <= b.num_blocks < 385 and not b.can_start
        assert "needs 385 KV blocks" in b.reason and "sliding window 4096" in b.reason
    assert _spec(0.68).budget.can_start
    assert _spec(0.9, "v0").budget.blocks_per_max_request == 256   # V0 keeps the window-only rule


def test_direct_budget_calls_take_the_rule_and_the_step_budget():
    gpu = DEFAULT.gpus["A10G"]
    b = vllm_budget(gpu, MISTRAL_V01, gpu_memory_utilization=0.67, max_num_batched_tokens=2048)
    w = vllm_budget(gpu, MISTRAL_V01, gpu_memory_utilization=0.67, max_num_batched_tokens=2048, window_rule="window")
    assert b.num_blocks == w.num_blocks and not b.can_start and w.can_start

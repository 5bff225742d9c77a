"""vLLM's KV budget (exact formula, start-up refusal) and a naive server's memory in use."""

import math

import pytest

from catalog import DEFAULT, GIB
from simulation.gpu.memory import (BLOCK_SIZE, blocks_for, kv_bytes_per_token, kv_tokens_held,
                                   naive_base_bytes, naive_memory_bytes, prefill_activation_bytes,
                                   vision_activation_bytes, vllm_budget)

GPUS, MODELS = DEFAULT.gpus, DEFAULT.models


def expected_kv_tokens(gpu, model, util, act_gib, over_gib):
    """The budget formula written out independently:
    floor((CUDA total×util − W − A − O) / (16 × B/token)) × 16."""
    usable = int(gpu.cuda_total_bytes * util) - model.weights_bytes - int(act_gib * GIB) - int(over_gib * GIB)
    return max(0, math.floor(usable / (16 * model.kv_bytes_per_token)) * 16)  # no blocks when negative


@pytest.mark.parametrize("gpu", ["A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"])
@pytest.mark.parametrize("util", [0.8, 0.9, 0.95])
@pytest.mark.parametrize("act, over", [(1.0, 0.5), (0.0, 0.0), (2.0, 1.25)])
def test_llama3_8b_kv_capacity_follows_the_budget_formula_exactly(gpu, util, act, over):
    g, m = GPUS[gpu], MODELS["llama-3-8b"]
    b = vllm_budget(g, m, gpu_memory_utilization=util, activation_gib=act, overhead_gib=over)
    assert b.kv_tokens == expected_kv_tokens(g, m, util, act, over)
    assert b.kv_tokens == b.num_blocks * BLOCK_SIZE
    assert b.kv_budget_bytes - b.num_blocks * 16 * m.kv_bytes_per_token < 16 * m.kv_bytes_per_token


def test_worked_example_llama3_8b_on_a10g():
    # CUDA total 22.04 GiB × 0.9 = 19.836 GiB; − 16.06e9 B weights − the profile pass (8,192 tokens ×
    # (2 × 4096 + 3 × 14336) × 2 B + 4 × 4 B × 256 × 128,256 = 1.27 GiB) − 0.25 GiB non-torch = 3.359 GiB;
    # / 2 MiB per block.
    b = vllm_budget(GPUS["A10G"], MODELS["llama-3-8b"], gpu_memory_utilization=0.9)
    assert b.block_size == 16 and b.bytes_per_token == 131_072
    assert b.activation_bytes == 8192 * (2 * 4096 + 3 * 14336) * 2 + 16 * 256 * 128256
    assert b.num_blocks == 1719 and b.kv_tokens == 27_504
    assert b.can_start and b.max_full_length_sequences == 1719 // 512


def test_a100_80gb_holds_many_more_tokens_than_a10g():
    m = MODELS["llama-3-8b"]
    assert vllm_budget(GPUS["A100-80GB"], m).kv_tokens > 10 * vllm_budget(GPUS["A10G"], m).kv_tokens


def test_refuses_to_start_when_one_max_length_request_does_not_fit():
    m, g = MODELS["llama-3-8b"], GPUS["L4"]
    tight = vllm_budget(g, m, gpu_memory_utilization=0.76, max_model_len=8192)
    assert not tight.can_start
    assert tight.num_blocks > 0 and tight.kv_tokens < 8192
    assert "max_model_len 8192" in tight.reason
    # The same GPU starts with a shorter max_model_len (exactly when it fits; same profiling batch) or more memory.
    fits = vllm_budget(g, m, gpu_memory_utilization=0.76, max_model_len=tight.kv_tokens, max_num_batched_tokens=8192)
    assert fits.can_start
    assert not vllm_budget(g, m, gpu_memory_utilization=0.76, max_model_len=tight.kv_tokens + 1,
                           max_num_batched_tokens=8192).can_start
    assert vllm_budget(g, m, gpu_memory_utilization=0.9, max_model_len=8192).can_start


def test_refuses_to_start_when_weights_do_not_fit():
    b = vllm_budget(GPUS["A10G"], MODELS["llama-2-13b"])
    assert not b.can_start and "exceed" in b.reason and b.num_blocks == 0


def test_tensor_parallel_splits_weights_and_kv_heads():
    m = MODELS["llama-3-70b"]
    assert not vllm_budget(GPUS["H100-80GB"], m).can_start
    b = vllm_budget(GPUS["H100-80GB"], m, tp=4)
    assert b.can_start and b.bytes_per_token == 327_680 // 4 and b.weights_bytes == m.weights_bytes // 4


def test_sliding_window_caps_per_sequence_kv():
    m = MODELS["mistral-7b-v0.1"]
    assert kv_tokens_held(m, 32768) == 4096 and kv_tokens_held(m, 100) == 100
    assert blocks_for(m, 32768) == 256
    assert vllm_budget(GPUS["A10G"], m, window_rule="window").blocks_per_max_request == 256
    # V1 (the default) also keeps the step's new tokens: cdiv(4095 + 2048, 16) + 1 (test_gpu_sliding_window_start.py)
    assert vllm_budget(GPUS["A10G"], m, max_num_batched_tokens=2048).blocks_per_max_request == 385


def test_blocks_round_up_to_16_tokens():
    m = MODELS["llama-2-7b"]
    assert [blocks_for(m, n) for n in (1, 16, 17, 32, 33)] == [1, 1, 2, 2, 3]


def test_kv_bytes_per_token_zero_for_vision():
    assert kv_bytes_per_token(MODELS["resnet-50"]) == 0


# -- naive server ---------------------------------------------------------------------------------------

def test_naive_memory_is_base_plus_kv_plus_prefill_activation():
    m = MODELS["llama-2-7b"]
    base = naive_base_bytes(m, overhead_gib=1.5)
    assert base == m.weights_bytes + int(1.5 * GIB)
    assert naive_memory_bytes(m, []) == base
    assert naive_memory_bytes(m, [1000, 500]) == base + 1500 * 524_288
    assert naive_memory_bytes(m, [1000], [1000]) == base + 1000 * 524_288 + prefill_activation_bytes(m, 1000)


def test_prefill_activation_grows_superlinearly_with_eager_attention():
    m = MODELS["llama-2-7b"]
    a1, a2 = (prefill_activation_bytes(m, n, eager_attention=True) for n in (2000, 4000))
    assert a2 > 2 * a1
    assert prefill_activation_bytes(m, 4000) == pytest.approx(2 * prefill_activation_bytes(m, 2000), rel=1e-3)
    assert prefill_activation_bytes(m, 1000, bytes_per_token=0) == 0


def test_naive_oom_threshold_llama2_7b_on_a10g():
    """One capped request (4096 in + 1024 out) fits; four long requests in flight together do not; one uncapped long
    prompt alone does only with eager attention's L² score matrix."""
    m, cap = MODELS["llama-2-7b"], GPUS["A10G"].cuda_total_bytes
    assert naive_memory_bytes(m, [4096], [4096]) < cap
    assert naive_memory_bytes(m, [5120]) < cap
    assert naive_memory_bytes(m, [4096] * 4, [4096]) > cap
    assert naive_memory_bytes(m, [6000], [6000]) < cap < naive_memory_bytes(m, [6000], [6000], eager_attention=True)


def test_vision_activation_scales_with_pixels_and_batch():
    m = MODELS["resnet-50"]
    one = vision_activation_bytes(m, 224 * 224)
    assert one == 40 * 1024**2
    assert vision_activation_bytes(m, 448 * 448) == 4 * one
    assert vision_activation_bytes(m, 224 * 224, batch=8) == 8 * one

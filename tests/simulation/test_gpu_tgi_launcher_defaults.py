"""TGI v3.3.4's start-up defaults (simulation/gpu/tgi_launcher.py): the launcher's prefill budget, the router's
warm-up batch, --max-total-tokens sized from the KV pool, and the router's refusals."""

import pytest

import gpu_fakes
from catalog import DEFAULT
from simulation.gpu.tgi_launcher import (default_prefill_tokens, model_flops_per_token, vram_maximum_tokens,
                                         warmup_batch)

LLAMA31 = DEFAULT.models["llama-3.1-8b"]   # 131,072-token context


def test_tgis_flops_per_token_for_llama_8b():
    h, hd, inter = 4096, 128, 14336
    per_layer = 3 * 2 * 32 * hd * h + 2 * 2 * 8 * hd * h + 6 * h * inter   # q, attention, o; k, v; gate/up/down
    assert model_flops_per_token(LLAMA31) == 32 * per_layer


@pytest.mark.parametrize("gpu, tflops, shards", [("L40S", 363, 1), ("H100-80GB", 900, 1), ("A10G", 125, 1),
                                                 ("L40S", 363, 4)])
def test_the_prefill_budget_is_what_the_cards_flops_suit_capped_by_context_and_memory(gpu, tflops, shards):
    """Not max_input_tokens + 50 (131,121 for a 131,072-token model, which the simulation used before)."""
    g = DEFAULT.gpus[gpu]
    optimal = int(tflops * 1e12 * shards) // model_flops_per_token(LLAMA31)
    cap = vram_maximum_tokens(LLAMA31, g, shards, 1.0, 0.95)
    assert default_prefill_tokens(LLAMA31, g, shards, 1.0, None) == min(optimal, LLAMA31.max_context, cap)
    spec, problems = gpu_fakes.spec_of("tgi", {"model": "llama-3.1-8b", "gpu": gpu, "tensor_parallel_size": shards})
    assert problems == [] and spec.max_num_batched_tokens == min(optimal, 131072, cap) < 131071 + 50


def test_the_budget_falls_back_to_4096_on_a_card_tgi_does_not_know_and_ignores_max_batch_size():
    catalog = {"gpus": {"X1": {"memory_gib": 80, "bandwidth_gbps": 2000, "bf16_tflops": 400}}}
    spec, problems = gpu_fakes.spec_of("tgi", {"model": "llama-3.1-8b", "gpu": "X1", "catalog": catalog})
    assert problems == [] and spec.max_num_batched_tokens == 4096
    spec, _ = gpu_fakes.spec_of("tgi", {"model": "llama-3-8b", "gpu": "L40S", "max_input_tokens": 4096,
                                        "max_num_seqs": 8})   # --max-input-tokens=4096 --max-batch-size=8
    assert spec.max_num_batched_tokens == 8192 and spec.max_model_len == 8192 and spec.budget.can_start


def test_the_memory_cap_uses_the_launchers_wiggle_room_unless_the_variable_is_set():
    g = DEFAULT.gpus["A10G"]
    assert vram_maximum_tokens(LLAMA31, g, 1, 1.0, 0.95) > vram_maximum_tokens(LLAMA31, g, 1, 0.75, 0.95) > 0
    assert vram_maximum_tokens(LLAMA31, g, 1, 0.5, 0.95) is None   # the weights estimate alone does not fit
    low = default_prefill_tokens(LLAMA31, g, 1, 1.0, 0.65)         # TGI_WIGGLE_ROOM=0.65 set
    assert low == vram_maximum_tokens(LLAMA31, g, 1, 1.0, 0.65) < default_prefill_tokens(LLAMA31, g, 1, 1.0, None)


@pytest.mark.parametrize("prefill, max_input, max_batch, want", [
    (8192, None, None, (8192, 1)), (8192, 4096, None, (8192, 2)), (8192, 1000, None, (8192, 9)),
    (8192, 1000, 3, (3000, 3)), (8192, 10000, 2, (8192, 1))])
def test_the_warm_up_batch(prefill, max_input, max_batch, want):
    assert warmup_batch(prefill, max_input, max_batch) == want


def test_without_max_total_tokens_a_short_pool_lowers_the_cap_instead_of_refusing():
    """llama-3.1-8b on one A10G: the pool holds ~31k tokens of the 131k context. TGI v3.3.4 starts with
    --max-total-tokens = the pool's tokens and --max-input-tokens one less; given 131072, it refuses."""
    spec, problems = gpu_fakes.spec_of("tgi", {"model": "llama-3.1-8b", "gpu": "A10G"})
    b = spec.budget
    assert problems == [] and b.can_start and 0 < b.kv_tokens < 131072
    assert spec.max_model_len == b.kv_tokens and spec.max_input_tokens == b.kv_tokens - 1
    given, _ = gpu_fakes.spec_of("tgi", {"model": "llama-3.1-8b", "gpu": "A10G", "max_model_len": 131072})
    assert not given.budget.can_start and given.max_model_len == 131072 and given.budget.kv_tokens == b.kv_tokens


def test_an_input_cap_at_or_above_the_pool_sized_total_is_refused():
    spec, _ = gpu_fakes.spec_of("tgi", {"model": "llama-3.1-8b", "gpu": "A10G", "max_input_tokens": 100000})
    assert not spec.budget.can_start
    assert f"`max_input_tokens` (100000) must be < `max_total_tokens` ({spec.max_model_len})" in spec.budget.reason


def test_a_prefill_budget_above_the_pool_is_refused():
    """Fraction 0.84 on an A10G leaves 5,456 tokens: enough for one 4,096-token sequence (the old check), not for
    the 8,192-token prefill budget the router also holds to the pool."""
    data = {"model": "llama-3-8b", "gpu": "A10G", "max_model_len": 4096, "max_input_tokens": 2048}
    spec, _ = gpu_fakes.spec_of("tgi", {**data, "gpu_memory_utilization": 0.84})
    b = spec.budget
    assert spec.max_num_batched_tokens == 8192 and 4096 <= b.kv_tokens < 8192 and not b.can_start
    assert "`max_batch_prefill_tokens` must be <= `max_batch_total_tokens`" in b.reason
    assert gpu_fakes.spec_of("tgi", {**data, "gpu_memory_utilization": 0.88})[0].budget.can_start

"""The sliding-window start-up need on a block boundary: vLLM V1 SlidingWindowSpec.max_memory_usage_bytes
(vllm/v1/kv_cache_interface.py, v0.11.0) is cdiv(min(window − 1 + max_num_batched_tokens, max_model_len),
block_size) + 1. The other cases have window + batched a multiple of the block size, where the "− 1" never changes
the block count; here window − 1 + batched lands exactly on a block boundary, so dropping it asks one block more."""

from __future__ import annotations

import pytest

from catalog import DEFAULT
from simulation.gpu.memory import blocks_to_start

MISTRAL_V01 = DEFAULT.models["mistral-7b-v0.1"]   # sliding window 4096, context 32768


@pytest.mark.parametrize("batched, block, tokens", [(2049, 16, 6144), (1, 16, 4096), (33, 32, 4128)])
def test_window_minus_one_plus_batched_on_a_block_boundary(batched, block, tokens):
    assert MISTRAL_V01.sliding_window - 1 + batched == tokens and tokens % block == 0
    assert blocks_to_start(MISTRAL_V01, 32768, block, max_num_batched_tokens=batched) == tokens // block + 1


def test_the_window_is_capped_by_max_model_len():
    """min(…, max_model_len): a 2048-token context needs its own 128 blocks + 1, not the window's."""
    assert blocks_to_start(MISTRAL_V01, 2048, 16, max_num_batched_tokens=2048) == 2048 // 16 + 1

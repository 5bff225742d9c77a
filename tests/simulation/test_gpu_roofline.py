"""Roofline service times: decode rises with batch and falls with bandwidth; prefill grows with input."""

import pytest

from catalog import DEFAULT
from simulation.gpu.roofline import (Efficiency, calibrate_compute_efficiency, calibrate_memory_efficiency,
                                     decode_step_time, prefill_time, request_latency, vision_batch_time)

GPUS, MODELS = DEFAULT.gpus, DEFAULT.models
LLAMA3 = MODELS["llama-3-8b"]


@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_decode_step_time_rises_with_batch(gpu):
    times = [decode_step_time(LLAMA3, GPUS[gpu], b, 1024 * b) for b in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert all(a < b for a, b in zip(times, times[1:]))


def test_decode_step_time_falls_with_memory_bandwidth():
    order = ["L4", "A10G", "L40S", "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"]
    assert [GPUS[g].bandwidth_gbps for g in order] == sorted(GPUS[g].bandwidth_gbps for g in order)
    for batch in (1, 8, 32):
        times = [decode_step_time(LLAMA3, GPUS[g], batch, 1024 * batch) for g in order]
        assert all(a > b for a, b in zip(times, times[1:])), (batch, times)
    assert decode_step_time(LLAMA3, GPUS["A10G"], 8) > 3 * decode_step_time(LLAMA3, GPUS["H100-80GB"], 8)


def test_decode_is_memory_bound_weights_plus_kv_over_bandwidth():
    eff = Efficiency(memory=0.5, compute=1.0, step_overhead_s=0.0)
    g = GPUS["A100-80GB"]
    expected = (LLAMA3.weights_bytes + 131_072 * 4096) / (2039e9 * 0.5)
    assert decode_step_time(LLAMA3, g, 4, 4096, eff=eff) == pytest.approx(expected)


def test_decode_batch_one_matches_latency_priors():
    """gpu-memory-and-models.md: 7–8B ITL at batch 1 — H100 10–15 ms, A100 15–25 ms, L40S 25–35 ms."""
    assert 0.010 <= decode_step_time(LLAMA3, GPUS["H100-80GB"], 1, 256) <= 0.015
    assert 0.015 <= decode_step_time(LLAMA3, GPUS["A100-80GB"], 1, 256) <= 0.025
    assert 0.025 <= decode_step_time(LLAMA3, GPUS["L40S"], 1, 256) <= 0.035


def test_prefill_grows_with_input_tokens_and_is_compute_bound_for_long_prompts():
    g = GPUS["A100-80GB"]
    times = [prefill_time(LLAMA3, g, n) for n in (16, 256, 1024, 4096, 8192)]
    assert all(a <= b for a, b in zip(times, times[1:])) and times[-1] > times[1]
    eff = Efficiency(memory=1.0, compute=0.5, prefill_overhead_s=0.0)
    flops = 2 * 8.03e9 * 4096 + 2 * 32 * 4096 * 4096 * 4096
    assert prefill_time(LLAMA3, g, 4096, eff=eff) == pytest.approx(flops / (312e12 * 0.5))
    # Short prompts cannot beat reading the weights once.
    assert prefill_time(LLAMA3, g, 1, eff=eff) >= LLAMA3.weights_bytes / 2039e9


def test_prefill_faster_on_more_flops():
    assert prefill_time(LLAMA3, GPUS["H100-80GB"], 2048) < prefill_time(LLAMA3, GPUS["A100-80GB"], 2048)


def test_request_latency_ttft_and_e2e():
    ttft, e2e = request_latency(LLAMA3, GPUS["A100-80GB"], 1000, 100)
    assert 0 < ttft < e2e
    assert e2e == pytest.approx(ttft + 99 * decode_step_time(LLAMA3, GPUS["A100-80GB"], 1, 1050))


def test_calibration_round_trips():
    g = GPUS["L40S"]
    eff_mem = calibrate_memory_efficiency(LLAMA3, g, measured_itl_s=0.030, context_tokens=512)
    assert decode_step_time(LLAMA3, g, 1, 512, eff=Efficiency(memory=eff_mem)) == pytest.approx(0.030)
    eff_c = calibrate_compute_efficiency(LLAMA3, g, measured_prefill_s=0.25, input_tokens=4096)
    assert prefill_time(LLAMA3, g, 4096, eff=Efficiency(compute=eff_c, memory=10.0)) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        calibrate_memory_efficiency(LLAMA3, g, measured_itl_s=0.001)


def test_vision_batch_time_grows_with_batch_and_pixels():
    m, g = MODELS["vit-large-16"], GPUS["A10G"]
    t1 = vision_batch_time(m, g, [224 * 224])
    t8 = vision_batch_time(m, g, [224 * 224] * 8)
    assert t1 < t8 < 8 * t1
    assert vision_batch_time(m, g, [448 * 448]) > t1
    assert vision_batch_time(m, g, []) == 0.0


def test_attention_flops_scale_with_heads_times_head_dim_not_hidden_size():
    """Qwen3-32B: 64 heads × 128 = 8192, hidden 5120 (config.json); attention FLOPs use the former."""
    from dataclasses import replace

    from catalog import DEFAULT
    from simulation.gpu.roofline import prefill_flops

    m = DEFAULT.models["qwen3-32b"]
    assert prefill_flops(m, 1000) - m.flops_per_token * 1000 == 2.0 * 64 * 8192 * 1000 ** 2
    assert prefill_flops(replace(m, num_heads=0), 1000) - m.flops_per_token * 1000 == 2.0 * 64 * 5120 * 1000 ** 2


def test_naive_and_triton_size_from_the_cuda_reported_total():
    """torch sees Gpu.cuda_total_bytes (≈ 0.45 GiB under nvidia-smi's figure), as vLLM sizes from it."""
    from catalog import DEFAULT
    from gpu_fakes import make

    a10g = DEFAULT.gpus["A10G"]
    assert make("naive", {"model": "llama-2-7b", "gpu": "A10G"})[2].capacity == a10g.cuda_total_bytes
    assert make("triton", {"model": "resnet-50", "gpu": "A10G"})[2].capacity == a10g.cuda_total_bytes

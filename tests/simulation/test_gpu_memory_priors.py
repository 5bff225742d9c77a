"""The vLLM memory priors (profiling pass from the model's shape, non-torch memory, CUDA-reported total)
against two published engine start-up logs; docs/gpu-model.md ("Memory priors against real engines")
cites them and reports the same errors."""

import pytest

from catalog import DEFAULT, GIB
from simulation.gpu.memory import non_torch_bytes, profile_activation_bytes, vllm_budget

GPUS, MODELS = DEFAULT.gpus, DEFAULT.models

# (model, GPU, vLLM's profiling batch, max_num_seqs, logged: total GiB, weights, non-torch, activation, KV GiB)
# A: vllm-project/vllm PR #10511 (2024-12-13), `vllm serve meta-llama/Meta-Llama-3-8B`, H100, defaults (V0).
# B: kubernetes-sigs/gateway-api-inference-extension PR #550 (2025-03-21), meta-llama/Llama-2-7b-hf, H100,
#    vllm-openai:latest (0.8.1; --enable-lora → V0), defaults otherwise.
LOGS = {
    "A": ("llama-3-8b", "H100-80GB", 8192, 256, 79.22, 14.96, 1.79, 1.26, 53.29),
    "B": ("llama-2-7b", "H100-80GB", 4096, 256, 79.19, 12.55, 0.16, 2.38, 56.18),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_the_prior_kv_capacity_is_within_10_percent_of_the_published_log(name):
    model, gpu, tokens, seqs, total, weights, non_torch, act, kv = LOGS[name]
    b = vllm_budget(GPUS[gpu], MODELS[model], max_num_batched_tokens=tokens, max_num_seqs=seqs)
    assert abs(b.kv_budget_bytes / GIB / kv - 1) < 0.10
    assert abs(b.total_bytes / GIB - total) < 0.05  # the CUDA-reported total, not nvidia-smi's 79.65
    assert abs(b.weights_bytes / GIB - weights) < 0.01


def test_the_profile_pass_reproduces_the_llama3_activation_peak():
    _, _, tokens, seqs, *_, act, _ = LOGS["A"]
    assert profile_activation_bytes(MODELS["llama-3-8b"], tokens, seqs) / GIB == pytest.approx(act, rel=0.05)


def test_measured_figures_plugged_in_reproduce_the_log_within_1_percent():
    for model, gpu, tokens, seqs, total, weights, non_torch, act, kv in LOGS.values():
        b = vllm_budget(GPUS[gpu], MODELS[model], activation_gib=act, overhead_gib=non_torch)
        assert b.kv_budget_bytes / GIB == pytest.approx(kv, rel=0.01)


def test_priors_grow_with_the_profiling_batch_and_tensor_parallelism():
    m = MODELS["llama-3-8b"]
    assert profile_activation_bytes(m, 8192, 1024) > profile_activation_bytes(m, 2048, 256)
    assert profile_activation_bytes(m, 8192, 256, tp=2) < profile_activation_bytes(m, 8192, 256)
    assert non_torch_bytes(2) > non_torch_bytes(1)
    assert profile_activation_bytes(DEFAULT.models["resnet-50"], 8192) == 0

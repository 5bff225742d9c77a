"""The catalog's current LLMs: each architecture (layers, hidden, intermediate, query/KV heads, head dim,
vocabulary — from the model's published config.json) adds up to its published parameter count, so a typo in
any shape field fails here; the GPUs and the EC2 instance types that carry them."""

import pytest

from catalog import DEFAULT

# query heads where hidden_size != heads × head_dim (config.json num_attention_heads); tied embeddings (Gemma)
Q_HEADS = {"qwen2.5-7b": 28, "qwen2.5-14b": 40, "qwen2.5-32b": 40, "qwen2.5-72b": 64, "qwen3-8b": 32,
           "qwen3-32b": 64, "gemma-2-9b": 16, "gemma-2-27b": 32}
TIED = {"gemma-2-9b", "gemma-2-27b"}
GATED_MLP = [name for name, m in DEFAULT.models.items() if m.kind == "llm" and name != "opt-13b"]


@pytest.mark.parametrize("name", GATED_MLP)
def test_the_shape_adds_up_to_the_published_parameter_count(name):
    m = DEFAULT.models[name]
    h, d = m.hidden_size, m.head_dim
    attention = 2 * h * Q_HEADS.get(name, h // d) * d + 2 * h * m.kv_heads * d  # q, o; k, v
    mlp = 3 * h * m.intermediate_size  # gate, up, down
    embeddings = (1 if name in TIED else 2) * m.vocab_size * h
    assert (m.layers * (attention + mlp) + embeddings) / 1e9 == pytest.approx(m.params_b, rel=0.005)


def test_current_models_and_gpus_are_there():
    for name in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b",
                 "qwen3-32b", "gemma-2-9b", "gemma-2-27b"):
        assert DEFAULT.models[name].max_context >= 8192
    assert DEFAULT.models["llama-3.1-8b"].max_context == 131072
    assert DEFAULT.gpu_of("p5e.48xlarge").name == DEFAULT.gpu_of("p5en.48xlarge").name == "H200-141GB"
    assert DEFAULT.gpu_of("g6e.xlarge").name == "L40S"
    h200, h100 = DEFAULT.gpus["H200-141GB"], DEFAULT.gpus["H100-80GB"]
    assert h200.memory_gib > 140 and h200.bandwidth_gbps > h100.bandwidth_gbps
    assert h100.cuda_total_bytes < h100.memory_bytes  # what CUDA reports is below nvidia-smi's total

"""The catalog's tables: KV bytes per token from published configs, GPU and instance figures."""

import pytest

from catalog import DEFAULT, GIB, Gpu, Model


@pytest.mark.parametrize("name, bytes_per_token", [
    ("llama-2-7b", 524_288),   # 2 × 32 layers × 32 KV heads × 128 × 2 B (512 KiB)
    ("llama-2-13b", 819_200),  # 2 × 40 × 40 × 128 × 2 (800 KiB)
    ("opt-13b", 819_200),      # vLLM paper §3: "800 KB" per token
    ("llama-3-8b", 131_072),   # GQA: 8 KV heads (128 KiB)
    ("mistral-7b", 131_072),
    ("llama-3-70b", 327_680),  # 2 × 80 × 8 × 128 × 2 (320 KiB)
    ("llama-2-70b", 327_680),
])
def test_kv_bytes_per_token(name, bytes_per_token):
    assert DEFAULT.models[name].kv_bytes_per_token == bytes_per_token


def test_opt13b_one_2048_token_request_is_1_6_gb():
    # vLLM paper §3: "1.6 GB" for a single 2048-token request of OPT-13B.
    assert DEFAULT.models["opt-13b"].kv_bytes_per_token * 2048 == pytest.approx(1.6e9, rel=0.05)


@pytest.mark.parametrize("name, low_gib, high_gib", [
    ("llama-2-7b", 12.4, 12.7), ("llama-2-13b", 24.0, 24.5), ("llama-2-70b", 128.0, 131.0),
    ("llama-3-70b", 128.0, 132.0), ("mistral-7b", 13.3, 13.6),
])
def test_weights_match_published_sizes(name, low_gib, high_gib):
    assert low_gib <= DEFAULT.models[name].weights_gib <= high_gib


def test_required_gpus_with_memory_bandwidth_and_flops():
    gpus = DEFAULT.gpus
    for name, gib in [("A10G", 22.49), ("L4", 22.49), ("L40S", 44.99), ("A100-40GB", 40.0),
                      ("A100-80GB", 80.0), ("H100-80GB", 79.65), ("H200-141GB", 140.4)]:
        gpu = gpus[name]
        assert gpu.memory_gib == gib
        assert gpu.bandwidth_gbps > 0 and gpu.bf16_tflops > 0
    assert gpus["H100-80GB"].bandwidth_gbps > gpus["A100-80GB"].bandwidth_gbps > gpus["A10G"].bandwidth_gbps
    assert gpus["L4"].bandwidth_gbps < gpus["A10G"].bandwidth_gbps  # L4: 300 GB/s GDDR6


@pytest.mark.parametrize("instance, gpu, count", [
    ("g5.xlarge", "A10G", 1), ("g5.12xlarge", "A10G", 4), ("g5.48xlarge", "A10G", 8), ("g6.xlarge", "L4", 1),
    ("g6e.12xlarge", "L40S", 4), ("p4d.24xlarge", "A100-40GB", 8), ("p4de.24xlarge", "A100-80GB", 8),
    ("p5.48xlarge", "H100-80GB", 8), ("p5e.48xlarge", "H200-141GB", 8),
])
def test_instance_types_carry_gpus(instance, gpu, count):
    it = DEFAULT.instances[instance]
    assert (it.gpu, it.gpus) == (gpu, count)
    assert DEFAULT.gpu_of(instance).name == gpu


def test_every_instance_names_a_known_gpu():
    assert all(i.gpu in DEFAULT.gpus for i in DEFAULT.instances.values())


def test_models_include_a_vision_model_and_llm_shapes():
    kinds = {m.kind for m in DEFAULT.models.values()}
    assert kinds == {"llm", "vision"}
    for m in DEFAULT.models.values():
        if m.kind == "llm":
            assert m.layers and m.kv_heads and m.head_dim and m.max_context and m.hidden_size and m.vocab_size
        else:
            assert m.activation_mib_per_item > 0 and m.gflops_per_item > 0


def test_extended_adds_and_overrides_without_touching_default():
    mine = Model("my-7b", "llm", params_b=7.0, layers=32, kv_heads=8, head_dim=128, max_context=4096)
    fat = Gpu("A10G", memory_gib=48.0, bandwidth_gbps=600, bf16_tflops=70)
    cat = DEFAULT.extended(gpus=[fat], models=[mine])
    assert cat.models["my-7b"].kv_bytes_per_token == 131_072
    assert cat.gpus["A10G"].memory_gib == 48.0
    assert DEFAULT.gpus["A10G"].memory_gib == 22.49 and "my-7b" not in DEFAULT.models
    assert cat.gpus["A10G"].memory_bytes == 48 * GIB


def test_mistral_7b_is_the_release_the_stacks_deploy_and_v0_1_keeps_its_window():
    """stacks/Pulumi.prod.yaml serves mistralai/Mistral-7B-Instruct-v0.3, whose config.json has "sliding_window": null
    and "vocab_size": 32768; v0.1 had a 4,096-token window and 32,000 tokens."""
    for name in ("mistral-7b", "mistral-7b-v0.3"):
        m = DEFAULT.models[name]
        assert (m.sliding_window, m.vocab_size, m.max_context) == (0, 32768, 32768)
    v01 = DEFAULT.models["mistral-7b-v0.1"]
    assert (v01.sliding_window, v01.vocab_size) == (4096, 32000)


@pytest.mark.parametrize("name, heads, width", [
    ("llama-3-8b", 32, 4096), ("qwen3-32b", 64, 8192), ("gemma-2-9b", 16, 4096), ("gemma-2-27b", 32, 4096),
])
def test_attention_heads_follow_config_json_not_hidden_size(name, heads, width):
    """num_attention_heads × head_dim is the attention width; Qwen3-32B and Gemma-2 set head_dim apart from
    hidden_size (Qwen3-32B: 64 × 128 = 8192 against hidden 5120)."""
    m = DEFAULT.models[name]
    assert (m.attention_heads, m.attention_width) == (heads, width)

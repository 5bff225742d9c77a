"""A tensor-parallel size must divide the model's attention heads: vLLM (`ModelConfig.verify_with_parallel_config`)
and TGI v3.3.4 (`FlashLlamaAttention`: "`num_heads` must be divisible by `num_shards`") refuse to start otherwise.
A scenario naming such a size is refused at its key; the start-up plan (`vllm_budget`) says why it cannot start."""

import pytest

import gpu_fakes
from catalog import DEFAULT
from simulation.gpu.memory import vllm_budget
from simulation.gpu.tensor_parallel import heads_problem, shard_sizes

MODELS, GPUS = DEFAULT.models, DEFAULT.gpus


@pytest.mark.parametrize("kind", ["vllm", "tgi"])
@pytest.mark.parametrize("model, instance, tp, allowed", [
    ("llama-3-8b", "g6e.12xlarge", 3, "(1, 2, 4)"),        # 32 heads, 4 GPUs on the node
    ("qwen2.5-7b", "g6e.48xlarge", 8, "(1, 2, 4, 7)"),     # 28 heads, 8 GPUs on the node
    ("llama-3-70b", "p5.48xlarge", 6, "(1, 2, 4, 8)"),     # 64 heads
])
def test_a_size_that_does_not_divide_the_heads_is_refused_at_its_key(kind, model, instance, tp, allowed):
    heads = MODELS[model].attention_heads
    spec, problems = gpu_fakes.spec_of(kind, {"model": model, "instance_type": instance, "tensor_parallel_size": tp,
                                              "max_model_len": 4096})
    assert [p.path for p in problems] == ["server.tensor_parallel_size"] and problems[0].value == tp
    text = problems[0].allowed
    assert allowed in text and f"Total number of attention heads ({heads}) must be divisible by tensor parallel " \
        f"size ({tp})" in text and f"{model} has {heads} attention heads" in text


@pytest.mark.parametrize("kind", ["vllm", "tgi"])
def test_a_size_that_divides_the_heads_is_accepted(kind):
    spec, problems = gpu_fakes.spec_of(kind, {"model": "qwen2.5-7b", "instance_type": "g6e.48xlarge",
                                              "tensor_parallel_size": 4, "max_model_len": 4096})
    assert problems == [] and spec.profile.tp == 4 and spec.budget.can_start


def test_the_start_up_plan_refuses_before_it_counts_memory():
    """llama-3-8b at tp 3 fits the memory of 3 L40S with room to spare; vLLM still exits at its config check."""
    m, gpu = MODELS["llama-3-8b"], GPUS["L40S"]
    bad, good = vllm_budget(gpu, m, tp=3, max_model_len=4096), vllm_budget(gpu, m, tp=2, max_model_len=4096)
    assert good.can_start and good.reason == ""
    assert not bad.can_start and bad.num_blocks > bad.blocks_per_max_request   # memory alone would start it
    assert bad.reason == heads_problem(m, 3) and "(32)" in bad.reason and "(3)" in bad.reason


def test_heads_are_config_json_num_attention_heads_for_every_llm_and_sizes_are_their_divisors():
    for m in DEFAULT.models.values():
        if m.kind != "llm":
            assert shard_sizes(m, 8) == list(range(1, 9)) and heads_problem(m, 3) == ""
            continue
        assert m.num_heads == m.attention_heads > 0, m.name   # stated, not derived from hidden_size
        assert shard_sizes(m, 16) == [n for n in range(1, 17) if m.num_heads % n == 0]
    assert shard_sizes(MODELS["opt-13b"], 8) == [1, 2, 4, 5, 8]              # 40 heads
    assert shard_sizes(MODELS["gemma-2-9b"], 8) == [1, 2, 4, 8]             # 16 heads


def test_a_user_model_without_heads_is_not_checked():
    from dataclasses import replace
    unknown = replace(MODELS["llama-3-8b"], num_heads=0, hidden_size=0)
    assert unknown.attention_heads == 0 and heads_problem(unknown, 3) == "" and shard_sizes(unknown, 3) == [1, 2, 3]

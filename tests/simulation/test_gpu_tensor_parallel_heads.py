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


def test_a_scenario_restating_a_built_in_model_keeps_its_heads():
    """A scenario's `server.catalog` entry for gemma-2-9b that gives only its sizes keeps the built-in's 16 query
    heads (the stack's `catalog` does the same): hidden_size // head_dim would be 14, which 4 GPUs cannot share."""
    g = MODELS["gemma-2-9b"]
    entry = {"kind": "llm", "params_b": g.params_b, "layers": g.layers, "kv_heads": g.kv_heads, "head_dim": g.head_dim,
             "max_context": g.max_context, "hidden_size": g.hidden_size, "vocab_size": g.vocab_size, "repo_gib": 20.0}
    assert g.hidden_size // g.head_dim % 4 != 0 and g.num_heads % 4 == 0
    server = {"model": "gemma-2-9b", "instance_type": "g6e.12xlarge", "tensor_parallel_size": 4,
              "max_model_len": 4096, "catalog": {"models": {"gemma-2-9b": entry}}}
    spec, problems = gpu_fakes.spec_of("vllm", server)
    assert problems == [] and spec.profile.model.attention_heads == g.num_heads and spec.profile.model.repo_gib == 20
    spec, problems = gpu_fakes.spec_of("vllm", {**server, "catalog": {"models": {"gemma-2-9b": {**entry,
                                                                                              "num_heads": 14}}}})
    assert [p.path for p in problems] == ["server.tensor_parallel_size"]

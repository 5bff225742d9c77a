"""A tensor-parallel size must split the model's query heads, KV heads and MLP: vLLM
(`ModelConfig.verify_with_parallel_config` for the query heads; `QKVParallelLinear`, which also replicates KV heads
over a multiple of their count; `MergedColumnParallelLinear` for intermediate_size) and TGI v3.3.4
(`FlashLlamaAttention`: "`num_heads` / `num_key_value_heads` must be divisible by `num_shards`"; `get_sharded` for
the MLP) refuse to start otherwise. A scenario naming such a size is refused at its key; the start-up plan
(`vllm_budget`) says why it cannot start."""

import pytest

import gpu_fakes
from catalog import DEFAULT
from simulation.gpu.memory import vllm_budget
from simulation.gpu.tensor_parallel import heads_problem, shard_sizes

MODELS, GPUS = DEFAULT.models, DEFAULT.gpus


@pytest.mark.parametrize("kind", ["vllm", "tgi"])
@pytest.mark.parametrize("model, instance, tp, allowed", [
    ("llama-3-8b", "g6e.12xlarge", 3, "(1, 2, 4)"),        # 32 heads, 4 GPUs on the node
    ("qwen2.5-7b", "g6e.48xlarge", 8, "(1, 2, 4)"),        # 28 heads (7 would not split its 4 KV heads)
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


def _splits(m, n, engine):
    """The three rules, restated from the sources the module cites."""
    kv_ok = m.kv_heads % n == 0 or (engine == "vllm" and n % m.kv_heads == 0)
    return m.num_heads % n == 0 and kv_ok and m.intermediate_size % n == 0


@pytest.mark.parametrize("engine", ["vllm", "tgi"])
def test_every_llm_states_its_heads_kv_heads_and_mlp_and_sizes_follow_all_three(engine):
    for m in DEFAULT.models.values():
        if m.kind != "llm":
            assert shard_sizes(m, 8, engine) == list(range(1, 9)) and heads_problem(m, 3, engine) == ""
            continue
        assert m.num_heads == m.attention_heads > 0, m.name   # stated, not derived from hidden_size
        assert m.kv_heads > 0 and m.intermediate_size > 0, m.name   # config.json num_key_value_heads, intermediate_size
        assert shard_sizes(m, 16, engine) == [n for n in range(1, 17) if _splits(m, n, engine)], m.name
    assert shard_sizes(MODELS["opt-13b"], 8, engine) == [1, 2, 4, 5, 8]          # 40 heads, 40 KV heads, 20480
    assert shard_sizes(MODELS["gemma-2-9b"], 8, engine) == [1, 2, 4, 8]         # 16 heads
    assert shard_sizes(MODELS["llama-2-13b"], 8, engine) == [1, 2, 4, 8]        # 40 heads, but 13824 % 5 != 0
    assert shard_sizes(MODELS["qwen2.5-14b"], 8, engine) == [1, 2, 4, 8]        # 40 heads, but 8 KV heads


def test_a_user_model_without_heads_is_not_checked():
    from dataclasses import replace
    unknown = replace(MODELS["llama-3-8b"], num_heads=0, hidden_size=0, kv_heads=0, intermediate_size=0)
    assert unknown.attention_heads == 0 and heads_problem(unknown, 3) == "" and shard_sizes(unknown, 3) == [1, 2, 3]
    # each figure left out skips only its own rule
    no_kv = replace(MODELS["qwen2.5-14b"], kv_heads=0, intermediate_size=0)
    assert heads_problem(no_kv, 5) == "" and heads_problem(replace(no_kv, num_heads=32), 5) != ""
    no_mlp = replace(MODELS["llama-2-13b"], intermediate_size=0)
    assert heads_problem(no_mlp, 5) == "" and "intermediate_size 13824" in heads_problem(MODELS["llama-2-13b"], 5)


# --- KV heads and the MLP (review rev12-runtimes F3) ------------------------------------------------------------
@pytest.mark.parametrize("kind, quote", [
    ("vllm", "'8 is not divisible by 5', QKVParallelLinear"),
    ("tgi", "'`num_key_value_heads` must be divisible by `num_shards`'"),
])
def test_a_size_that_divides_the_query_heads_but_not_the_kv_heads_is_refused(kind, quote):
    """qwen2.5-14b: 40 query heads (5 divides them), 8 KV heads (5 neither divides nor is a multiple of them)."""
    m = MODELS["qwen2.5-14b"]
    assert m.num_heads % 5 == 0 and m.kv_heads % 5 and 5 % m.kv_heads
    spec, problems = gpu_fakes.spec_of(kind, {"model": "qwen2.5-14b", "instance_type": "p4de.24xlarge",
                                              "tensor_parallel_size": 5, "max_model_len": 4096})
    assert [p.path for p in problems] == ["server.tensor_parallel_size"] and problems[0].value == 5
    text = problems[0].allowed
    assert "(1, 2, 4, 8)" in text and "qwen2.5-14b has num_key_value_heads 8" in text and quote in text
    assert "attention heads" not in text   # the query heads are fine
    assert not spec.budget.can_start and "num_key_value_heads 8" in spec.budget.reason


def test_vllm_replicates_kv_heads_over_a_multiple_of_them_and_tgi_does_not():
    """Fewer KV heads than GPUs: vLLM gives each KV head tp / kv GPUs (`num_kv_head_replicas`), TGI refuses."""
    from dataclasses import replace
    m = replace(MODELS["llama-3-8b"], kv_heads=2)   # 32 query heads, 14336 MLP: 4 splits both
    assert heads_problem(m, 4, "vllm") == "" and vllm_budget(GPUS["L40S"], m, tp=4, max_model_len=4096).can_start
    tgi = heads_problem(m, 4, "tgi")
    assert "num_key_value_heads 2, which 4 shards cannot share evenly" in tgi and "never replicates" in tgi
    assert not vllm_budget(GPUS["L40S"], m, tp=4, max_model_len=4096, engine="tgi").can_start
    assert "'6 is not divisible by 2'" not in heads_problem(m, 6, "vllm")   # 6 % 2 == 0: replicated 3 times
    assert "'6 is not divisible by 4'" in heads_problem(replace(m, kv_heads=4), 6, "vllm")   # above 4: tp % kv
    assert "'8 is not divisible by 3'" in heads_problem(MODELS["llama-3-8b"], 3, "vllm")    # below 8: kv % tp
    assert shard_sizes(m, 8, "vllm") == [1, 2, 4, 8] and shard_sizes(m, 8, "tgi") == [1, 2]


@pytest.mark.parametrize("kind, quote", [
    ("vllm", "'13824 is not divisible by 5', MergedColumnParallelLinear"),
    ("tgi", "'The choosen size 13824 is not compatible with sharding on 5 shards'"),
])
def test_a_size_that_does_not_divide_the_mlp_is_refused(kind, quote):
    """llama-2-13b: 40 query and KV heads (5 divides both), intermediate_size 13824 (5 does not)."""
    spec, problems = gpu_fakes.spec_of(kind, {"model": "llama-2-13b", "instance_type": "g6e.48xlarge",
                                              "tensor_parallel_size": 5, "max_model_len": 4096})
    assert [p.path for p in problems] == ["server.tensor_parallel_size"]
    text = problems[0].allowed
    assert "(1, 2, 4, 8)" in text and "llama-2-13b has intermediate_size 13824" in text and quote in text
    assert "attention heads" not in text and "num_key_value_heads" not in text


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

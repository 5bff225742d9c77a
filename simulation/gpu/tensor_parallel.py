"""Which tensor-parallel sizes an engine can split a model over: every GPU takes an equal share of the query heads,
of the KV heads (vLLM may instead replicate them) and of the MLP.

vLLM (`engine="vllm"`):
- Query heads: `ModelConfig.verify_with_parallel_config` (vllm/config/model.py in v0.11.0) raises ValueError "Total
  number of attention heads (32) must be divisible by tensor parallel size (3)." while the engine's config is
  built, before a weight is loaded (config.json `num_attention_heads`).
- KV heads: `QKVParallelLinear` (vllm/model_executor/layers/linear.py) gives each GPU num_key_value_heads / tp
  heads when tp is below the KV heads, and replicates one head over tp / num_key_value_heads GPUs when it is not;
  both go through `vllm.distributed.utils.divide`, whose assertion ("8 is not divisible by 5") stops the worker
  while it builds the model. So num_key_value_heads % tp == 0 or tp % num_key_value_heads == 0.
- MLP: `MergedColumnParallelLinear` (gate/up) and `RowParallelLinear` (down) split config.json
  `intermediate_size` evenly over tp (`divide` again, an assertion in the same file).

TGI v3.3.4 (`engine="tgi"`; server/text_generation_server/models/custom_modeling/):
- Query heads: its Llama, Mistral, Qwen2, Gemma-2 and OPT attention layers (`FlashLlamaAttention` in
  flash_llama_modeling.py, the same check in flash_mistral_, flash_qwen2_, flash_gemma2_ and opt_modeling.py)
  raise ValueError "`num_heads` must be divisible by `num_shards`" while the shard loads.
- KV heads: the Llama layer raises ValueError "`num_key_value_heads` must be divisible by `num_shards`"; the
  others load k_proj/v_proj with `Weights.get_sharded` (utils/weights.py), whose assertion "The choosen size … is
  not compatible with sharding on … shards" fails on head_dim × num_key_value_heads, or divide the KV heads by the
  shards to 0. TGI never replicates KV heads: num_key_value_heads % shards == 0.
- MLP: gate_proj/up_proj/down_proj load through the same `get_sharded`: `intermediate_size` % shards == 0.

KServe starts both with one shard per GPU of the pod (huggingfaceserver: `tensor_parallel_size` = the GPUs it
sees; TGI's launcher: `--num-shard` from the visible devices), so a pod's `resources.gpus` must pass all three.

A figure the catalog does not know is not checked: query heads (`Model.attention_heads` 0: a user entry without
`num_heads` or `hidden_size`), KV heads (`kv_heads` 0) or the MLP width (`intermediate_size` 0). The vocabulary is
not a constraint: vLLM pads its embedding and head to a multiple of tp (`VocabParallelEmbedding`), and TGI's head
falls back to an unsharded one when the vocabulary does not divide (`TensorParallelHead.load`).
"""

from __future__ import annotations

from catalog import Model

ENGINES = ("vllm", "tgi")


def shard_sizes(model: Model, up_to: int, engine: str = "vllm") -> list[int]:
    """Tensor-parallel sizes from 1 to `up_to` that `engine` can shard the model over (all of them if unknown)."""
    return [n for n in range(1, up_to + 1) if not heads_problem(model, n, engine)]


def _query_problem(model: Model, tp: int) -> str:
    heads = model.attention_heads
    if not heads or heads % tp == 0:
        return ""
    return (f"{model.name} has {heads} attention heads, which {tp} GPUs cannot share evenly: the engine refuses "
            f"to start (vLLM: 'Total number of attention heads ({heads}) must be divisible by tensor parallel size "
            f"({tp})', ModelConfig.verify_with_parallel_config; TGI: '`num_heads` must be divisible by "
            "`num_shards`')")


def _kv_problem(model: Model, tp: int, engine: str) -> str:
    kv = model.kv_heads
    if not kv or kv % tp == 0 or (engine == "vllm" and tp % kv == 0):
        return ""
    if engine == "tgi":
        return (f"{model.name} has num_key_value_heads {kv}, which {tp} shards cannot share evenly (TGI needs a "
                "shard count that divides it and never replicates KV heads): TGI refuses to load the model "
                "('`num_key_value_heads` must be divisible by `num_shards`', FlashLlamaAttention; the other "
                "models' sharded k_proj/v_proj load fails the same way)")
    num, den = (kv, tp) if tp < kv else (tp, kv)
    return (f"{model.name} has num_key_value_heads {kv}, which {tp} GPUs can neither split nor replicate evenly "
            f"(vLLM needs a size that divides {kv} or a multiple of it): the worker stops while it builds the "
            f"model ('{num} is not divisible by {den}', QKVParallelLinear)")


def _mlp_problem(model: Model, tp: int, engine: str) -> str:
    inter = model.intermediate_size
    if not inter or inter % tp == 0:
        return ""
    if engine == "tgi":
        return (f"{model.name} has intermediate_size {inter}, which {tp} shards cannot share evenly: TGI refuses "
                f"to load the MLP ('The choosen size {inter} is not compatible with sharding on {tp} shards', "
                "Weights.get_sharded)")
    return (f"{model.name} has intermediate_size {inter}, which {tp} GPUs cannot share evenly: the worker stops "
            f"while it builds the MLP ('{inter} is not divisible by {tp}', MergedColumnParallelLinear)")


def heads_problem(model: Model, tp: int, engine: str = "vllm") -> str:
    """Why `engine` ("vllm" or "tgi") refuses to shard `model` over `tp` GPUs ("" when it can): the query heads,
    the KV heads and the MLP width, each problem found, in that order."""
    if model.kind != "llm" or tp <= 1:
        return ""
    found = [p for p in (_query_problem(model, tp), _kv_problem(model, tp, engine), _mlp_problem(model, tp, engine))
             if p]
    return "; ".join(found)


__all__ = ["ENGINES", "heads_problem", "shard_sizes"]

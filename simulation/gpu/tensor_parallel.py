"""Which tensor-parallel sizes an engine can split a model over: every GPU takes an equal share of the query heads.

- vLLM: `ModelConfig.verify_with_parallel_config` (vllm/config/model.py in v0.11.0) raises ValueError "Total
  number of attention heads (32) must be divisible by tensor parallel size (3)." while the engine's config is
  built, before a weight is loaded (config.json `num_attention_heads`).
- TGI v3.3.4: the attention layers of its Llama, Mistral, Qwen2, Gemma-2 and OPT models
  (server/text_generation_server/models/custom_modeling/flash_llama_modeling.py `FlashLlamaAttention`, and the
  same check in flash_mistral_, flash_qwen2_, flash_gemma2_ and opt_modeling.py) raise ValueError "`num_heads`
  must be divisible by `num_shards`" while the shard loads.

KServe starts both with one shard per GPU of the pod (huggingfaceserver: `tensor_parallel_size` = the GPUs it
sees; TGI's launcher: `--num-shard` from the visible devices), so a pod's `resources.gpus` must divide the heads.

Only the query-head rule. Not modelled: TGI's Llama also requires the KV heads to divide (`num_key_value_heads`
must be divisible by `num_shards`; vLLM replicates KV heads over tp instead when there are fewer). A model whose
heads are unknown (`Model.attention_heads` 0: a user entry without `num_heads` or `hidden_size`) is not checked.
"""

from __future__ import annotations

from catalog import Model


def shard_sizes(model: Model, up_to: int) -> list[int]:
    """Tensor-parallel sizes from 1 to `up_to` that divide the model's query heads (all of them if unknown)."""
    heads = model.attention_heads if model.kind == "llm" else 0
    return [n for n in range(1, up_to + 1) if not heads or heads % n == 0]


def heads_problem(model: Model, tp: int) -> str:
    """Why an engine refuses to shard `model` over `tp` GPUs ("" when it can)."""
    heads = model.attention_heads if model.kind == "llm" else 0
    if not heads or heads % tp == 0:
        return ""
    return (f"{model.name} has {heads} attention heads, which {tp} GPUs cannot share evenly: the engine refuses "
            f"to start (vLLM: 'Total number of attention heads ({heads}) must be divisible by tensor parallel size "
            f"({tp})', ModelConfig.verify_with_parallel_config; TGI: '`num_heads` must be divisible by "
            "`num_shards`')")


__all__ = ["heads_problem", "shard_sizes"]

"""TGI v3.3.4's start-up defaults and refusals: the prefill budget its launcher picks, the warm-up batch its router
sends, and the router's checks once the server has sized the KV pool (pure; read by `tgi.py`).

Sources: text-generation-inference at tag v3.3.4 (the default image,
ghcr.io/huggingface/text-generation-inference:3.3.4).

* `--max-batch-prefill-tokens` unset (launcher/src/main.rs `main`): the cards' fp16 FLOP/s over the model's FLOPs
  per token (`compute_optimal`, kept only above 100), else 4096 for a text model; then at most the model's
  `max_position_embeddings`, and at most the tokens `vram_maximum` leaves: nvidia-smi's total × shards ×
  `--cuda-memory-fraction` × TGI_WIGGLE_ROOM (the launcher's own default 0.95, not the server's 0.90), less
  TGI's estimate of the weights, over its estimate of the memory per token. The FLOP/s are TGI's own table per
  card (`ComputeType::f16_flop`; A10G 125 T where NVIDIA's dense bf16 figure is 70), × the shards; a card it does
  not know gets 4096. `--max-batch-size` plays no part (v2-era launchers multiplied it by the input cap).
* The warm-up batch (backends/v3/src/client/grpc_client.rs `warmup`): requests of min(`--max-input-tokens`, what
  is left) tokens until the prefill budget is filled, stopping early at `--max-batch-size` requests.
* `--max-total-tokens` unset (server/text_generation_server/models/flash_causal_lm.py `warmup`, with prefill
  chunking, TGI's default for these models): min(the KV pool's tokens, the model's context); `--max-input-tokens`
  unset: that − 1. So a pool shorter than the context lowers the cap (more 422s) where vLLM refuses to start.
* The router then refuses (backends/v3/src/main.rs `run`): `max_input_tokens` ≥ `max_total_tokens`, a prefill budget
  above the pool's tokens (`max_batch_total_tokens`), and `max_total_tokens` above it (the budget's own check).
  Its `max_input_tokens` > prefill budget refusal applies only without prefill chunking, not modelled.

Simplifications: TGI's flashinfer blocks hold 1 token; the pool is still counted in 16-token blocks here.
"""

from __future__ import annotations

import math

from catalog import Gpu, Model

# ComputeType::f16_flop per card, TFLOP/s, keyed by the catalog GPU whose nvidia-smi name TGI matches.
F16_TFLOPS = {"A10G": 125, "L4": 121, "L40S": 363, "A100-40GB": 312, "A100-80GB": 312, "H100-80GB": 900,
              "H200-141GB": 989}
FALLBACK_PREFILL_TOKENS = 4096  # a text model's default when compute_optimal gives nothing
LAUNCHER_WIGGLE_ROOM = 0.95  # `ComputeType::vram`: TGI_WIGGLE_ROOM's default in the launcher


def _shape(model: Model) -> tuple[int, int, int, int, int, int]:
    inter = model.intermediate_size or int(3.5 * model.hidden_size)
    return model.attention_heads, model.kv_heads, model.head_dim, model.hidden_size, inter, model.layers


def model_flops_per_token(model: Model) -> int:
    """TGI's `Config::flop`: per layer q, attention and o 2 × heads × head_dim × hidden each, k and v 2 × KV heads
    × head_dim × hidden each, the MLP 6 × hidden × intermediate (0 if the shape is unknown)."""
    heads, kv, hd, h, inter, layers = _shape(model)
    if not (heads and kv and hd and h and layers):
        return 0
    return layers * (3 * 2 * heads * hd * h + 2 * 2 * kv * hd * h + 6 * h * inter)


def vram_maximum_tokens(model: Model, gpu: Gpu, shards: int, fraction: float, wiggle: float) -> int | None:
    """`vram_maximum`: (total × shards × fraction × wiggle − TGI's weights estimate) // its per-token estimate;
    None when the weights estimate does not fit (the launcher then leaves the budget alone)."""
    heads, kv, hd, h, inter, layers = _shape(model)
    if not (heads and kv and hd and h and layers and model.vocab_size):
        return None
    available = int(int(gpu.memory_gib * 1024) * 2**20 * shards * fraction * wiggle)
    weights = 2 * (layers * (3 * inter * h + (heads + 2 * kv) * hd + heads * hd * h) + 2 * h * model.vocab_size)
    per_token = kv * 2 * hd * 2 * layers + (inter + inter // 2) * 2 * 3
    return (available - weights) // per_token if available >= weights else None


def default_prefill_tokens(model: Model, gpu: Gpu, shards: int, fraction: float, wiggle: float | None) -> int:
    """`--max-batch-prefill-tokens` when not given (module docstring); `wiggle`: TGI_WIGGLE_ROOM if set."""
    flops = model_flops_per_token(model)
    optimal = int(F16_TFLOPS[gpu.name] * 1e12 * shards) // flops if flops and gpu.name in F16_TFLOPS else 0
    value = optimal if optimal > 100 else FALLBACK_PREFILL_TOKENS
    if model.max_context:
        value = min(value, model.max_context)
    cap = vram_maximum_tokens(model, gpu, shards, fraction, LAUNCHER_WIGGLE_ROOM if wiggle is None else wiggle)
    return value if cap is None else min(value, cap)


def warmup_batch(prefill_tokens: int, max_input_tokens: int | None, max_batch_size: int | None) -> tuple[int, int]:
    """(tokens, requests) of the router's warm-up batch; `max_input_tokens`/`max_batch_size`: the flags, if given."""
    per = min(max_input_tokens, prefill_tokens) if max_input_tokens else prefill_tokens
    requests = math.ceil(prefill_tokens / per) if per > 0 else 0
    if max_batch_size:
        requests = min(requests, max_batch_size)
    return min(prefill_tokens, requests * per), requests


def router_problem(max_input_tokens: int, max_total_tokens: int, prefill_tokens: int, pool_tokens: int) -> str:
    """Why TGI's router refuses to start once the pool is sized ("" when it starts)."""
    if max_input_tokens >= max_total_tokens:
        return (f"TGI refuses to start: `max_input_tokens` ({max_input_tokens}) must be < `max_total_tokens` "
                f"({max_total_tokens})")
    if prefill_tokens > pool_tokens:
        return (f"TGI refuses to start: `max_batch_prefill_tokens` must be <= `max_batch_total_tokens`. Given: "
                f"{prefill_tokens} and {pool_tokens} (the KV pool's tokens)")
    return ""


__all__ = ["default_prefill_tokens", "model_flops_per_token", "router_problem", "vram_maximum_tokens",
           "warmup_batch"]

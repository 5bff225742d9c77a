"""GPU memory of one model-server pod: the vLLM KV-cache budget and a naive server's memory in use (pure).

Two server behaviours (issue 4, item 2):

* **Pre-allocating engine (vLLM).** At start-up vLLM loads the weights, runs one profiling forward pass to
  measure the activation peak, and hands everything else under `gpu_memory_utilization` to the KV cache,
  cut into blocks of `block_size` = 16 tokens:

      usable_kv  = total_gpu_memory × gpu_memory_utilization − weights − activation peak − non-torch memory
      num_blocks = floor(usable_kv / (block_size × kv_bytes_per_token))
      kv_tokens  = num_blocks × block_size

  Sources: Kwon et al., "Efficient Memory Management for Large Language Model Serving with
  PagedAttention" (SOSP 2023) §3–4 (KV per token, fixed-size blocks; block size 16 is vLLM's default
  `CacheConfig.block_size`); vLLM `vllm/worker/worker.py: Worker.determine_num_available_blocks`
  (`available_kv_cache_memory = total_gpu_memory * gpu_memory_utilization - peak_memory`, then
  `num_gpu_blocks = int(available_kv_cache_memory // cache_block_size)`), and the figures vLLM logs at
  start-up ("model weights take … GiB; non_torch_memory takes … GiB; PyTorch activation peak memory takes
  … GiB; the rest of the memory reserved for KV Cache is … GiB"). Those log lines are how a user calibrates
  `activation_gib` and `overhead_gib` here. If the blocks cannot hold one sequence of `max_model_len`
  tokens, vLLM raises at start-up ("The model's max seq len (…) is larger than the maximum number of
  tokens that can be stored in KV cache (…)") — modelled as a start-up failure, never a runtime OOM.
  A sliding-window model needs less than max_model_len, but under V1 more than the window (`blocks_to_start`).
  A tensor-parallel size the engine cannot split the model's query heads, KV heads or MLP over is refused before
  any of this (`tensor_parallel.heads_problem`).

* **Naive server** (plain PyTorch / Transformers / TorchServe handler). Nothing is reserved: memory grows
  with what is in flight — the KV cache of every sequence (prompt + tokens generated so far) plus, while a
  prompt is being prefilled, its transient activations. Above the GPU's capacity the allocation raises
  `torch.cuda.OutOfMemoryError`.

Priors when the user has not measured them (`activation_gib` / `overhead_gib` unset), from the model's
shape (`profile_activation_bytes`, `non_torch_bytes`): the profiling pass runs `max_num_batched_tokens`
tokens through the model (vLLM `determine_available_memory` → `profile_run` / `_dummy_run`, then
`_dummy_sampler_run` over `max_num_seqs` requests), and "total GPU memory" is what the CUDA runtime reports
(`Gpu.cuda_total_bytes`). docs/gpu-model.md compares these priors with published start-up logs.

Simplifications (say so, calibrate): the priors are estimates, not a profile; allocator fragmentation is
folded into `overhead_gib`; tensor parallelism splits weights and KV heads evenly over `tp` GPUs and is
otherwise ideal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from catalog import GIB, Gpu, Model
from simulation.gpu.tensor_parallel import heads_problem

MIB = 1024**2

BLOCK_SIZE = 16  # tokens per KV block: vLLM's default `--block-size` (CacheConfig.block_size)
# vLLM's default `--gpu-memory-utilization` in the releases this project models: `CacheConfig.gpu_memory_utilization
# = 0.9` in v0.11.0 (vllm/config/cache.py; the custom image the stacks name, vllm/vllm-openai:v0.11.0). It was 0.9
# already in 2023 (vllm#2162 documents it), so also in the 0.8.5 that KServe v0.15.2's huggingfaceserver pins
# (python/huggingfaceserver/pyproject.toml; that release's file not read). Later vLLM raised it: main (read
# 2026-12) has 0.92. The stacks always render the flag; only a scenario that leaves it out uses this default.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.90
# Non-torch memory (CUDA context, cuBLAS workspaces) that start-up logs of recent versions show for one GPU
# (0.16–0.20 GiB in 2025 logs; 1.79 GiB in a December 2024 one), plus NCCL buffers with tensor parallelism
# (the same December 2024 log: +1.79 GiB at TP 2).
NON_TORCH_GIB = 0.25
NCCL_GIB = 0.75
# The sampler's fp32 tensors of max_num_seqs × vocab alive at the profile peak (logits, probabilities,
# log-probabilities, the sort for top-p/top-k): 4 copies reproduces the December 2024 Llama-3-8B log.
SAMPLER_COPIES = 4
# A naive PyTorch server: CUDA context + caching-allocator slack/fragmentation; no CUDA graphs.
DEFAULT_NAIVE_OVERHEAD_GIB = 1.5


def kv_bytes_per_token(model: Model, tp: int = 1) -> int:
    """KV bytes one token occupies on one GPU: 2 (K and V) × layers × KV heads / tp × head dim × dtype bytes."""
    if model.kind != "llm":
        return 0
    return 2 * model.layers * math.ceil(model.kv_heads / tp) * model.head_dim * model.dtype_bytes


def kv_tokens_held(model: Model, context_tokens: int) -> int:
    """Tokens of KV a sequence of `context_tokens` keeps: all of them, or the sliding window (Mistral)."""
    if model.sliding_window:
        return min(context_tokens, model.sliding_window)
    return context_tokens


def blocks_for(model: Model, context_tokens: int, block_size: int = BLOCK_SIZE) -> int:
    """KV blocks a sequence needs (the last block is partly empty: PagedAttention's only waste)."""
    return math.ceil(kv_tokens_held(model, context_tokens) / block_size)


def blocks_to_start(model: Model, max_model_len: int, block_size: int = BLOCK_SIZE, *,
                    max_num_batched_tokens: int = 0, window_rule: str = "v1") -> int:
    """KV blocks the engine must have for one `max_model_len` request, or it refuses to start.

    Full attention: every token's KV, cdiv(max_model_len, block_size) (vLLM V1 `FullAttentionSpec.
    max_memory_usage_bytes`, vllm/v1/kv_cache_interface.py, v0.11.0). A sliding window under V1
    (`SlidingWindowSpec.max_memory_usage_bytes`, same file): cdiv(min(window − 1 + max_num_batched_tokens,
    max_model_len), block_size) + 1 — a chunked-prefill step keeps the last window − 1 computed tokens beside the
    step's new ones, and the window may start inside a block; `check_enough_kv_cache_memory`
    (vllm/v1/core/kv_cache_utils.py) refuses to start below it. `window_rule="window"`: the window's blocks alone,
    the rule kept for `scheduler: v0` and TGI (not checked against their sources)."""
    if model.sliding_window and window_rule == "v1":
        tokens = min(model.sliding_window - 1 + max_num_batched_tokens, max_model_len)
        return math.ceil(tokens / block_size) + 1
    return blocks_for(model, max_model_len, block_size)


def profile_activation_bytes(model: Model, tokens: int, max_num_seqs: int = 256, tp: int = 1) -> int:
    """Peak torch memory of vLLM's profiling pass over `tokens` (= `max_num_batched_tokens`) tokens.

    At the MLP, the largest point of a decoder layer: the residual and the normed hidden states (2 × hidden),
    the fused gate/up projection (2 × intermediate / tp) and its activation (intermediate / tp), in the
    model's dtype, per token; then the sampler over `max_num_seqs` requests: `SAMPLER_COPIES` fp32 tensors of
    vocab entries each. Layers run one after another, so one layer's temporaries are alive at a time.
    """
    if model.kind != "llm":
        return 0
    inter = model.intermediate_size or int(3.5 * model.hidden_size)
    per_token = (2 * model.hidden_size + 3 * inter / tp) * model.dtype_bytes
    sampler = SAMPLER_COPIES * 4 * min(max_num_seqs, tokens) * model.vocab_size
    return int(tokens * per_token + sampler)


def non_torch_bytes(tp: int = 1) -> int:
    """Prior for memory outside PyTorch's allocator: CUDA context and workspaces, NCCL with tp > 1."""
    return int((NON_TORCH_GIB + (NCCL_GIB if tp > 1 else 0.0)) * GIB)


def max_startup_utilization(gpu: Gpu, tp: int = 1, non_torch_gib: float | None = None) -> float:
    """The largest `gpu_memory_utilization` vLLM V1 starts with on `gpu`. `Worker.init_device`
    (vllm/v1/worker/gpu_worker.py) snapshots memory once the CUDA context (and NCCL, with tp > 1) is up and
    raises ValueError ("Free memory on device … on startup is less than desired GPU memory utilization") when
    free < total × utilization. Free = the CUDA-reported total − non-torch memory (`non_torch_bytes`, or a
    measured `non_torch_gib`; a measured figure also holds cuBLAS workspaces, so this errs on refusing)."""
    total = gpu.cuda_total_bytes
    used = non_torch_bytes(tp) if non_torch_gib is None else int(non_torch_gib * GIB)
    return max(0.0, (total - used) / total)


@dataclass(frozen=True)
class VllmBudget:
    """vLLM's start-up memory plan on one GPU (all sizes in bytes)."""

    total_bytes: int
    gpu_memory_utilization: float
    weights_bytes: int
    activation_bytes: int
    overhead_bytes: int
    kv_budget_bytes: int  # total × utilization − weights − activation − overhead (may be negative)
    bytes_per_token: int
    block_size: int
    num_blocks: int
    kv_tokens: int  # num_blocks × block_size
    max_model_len: int
    blocks_per_max_request: int
    can_start: bool
    reason: str  # why it cannot start ("" when it can)

    @property
    def max_full_length_sequences(self) -> int:
        """How many max_model_len sequences fit at once (vidur MemoryPlanner's "max batch size")."""
        return self.num_blocks // self.blocks_per_max_request if self.blocks_per_max_request else 0


def vllm_budget(gpu: Gpu, model: Model, *, gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
                max_model_len: int | None = None, activation_gib: float | None = None,
                overhead_gib: float | None = None, block_size: int = BLOCK_SIZE, tp: int = 1,
                max_num_batched_tokens: int | None = None, max_num_seqs: int = 256,
                cuda_graph_gib: float = 0.0, window_rule: str = "v1", engine: str = "vllm") -> VllmBudget:
    """The KV-cache budget vLLM computes at start-up, and whether it starts at all (see module docstring).

    `activation_gib` / `overhead_gib` (measured, e.g. from a start-up log) replace the shape priors; None
    uses them (the profiling pass over `max_num_batched_tokens`, default max(max_model_len, 2048)).
    `cuda_graph_gib` is subtracted too, for versions that profile CUDA graphs before sizing the KV cache
    (older ones capture them afterwards, inside the 1 − gpu_memory_utilization headroom). `window_rule`: what a
    sliding-window model needs to start (`blocks_to_start`; the step budget is the same `max_num_batched_tokens`).
    `engine` ("vllm" or "tgi"): whose tensor-parallel rules apply (`tensor_parallel.heads_problem`)."""
    max_len = max_model_len or model.max_context
    total = gpu.cuda_total_bytes
    weights = model.weights_bytes // tp  # each tensor-parallel worker holds 1/tp of every weight matrix
    tokens = max_num_batched_tokens or max(max_len, 2048)
    if activation_gib is None:
        activation = profile_activation_bytes(model, tokens, max_num_seqs, tp)
    else:
        activation = int(activation_gib * GIB)
    overhead = (non_torch_bytes(tp) if overhead_gib is None else int(overhead_gib * GIB)) + int(cuda_graph_gib * GIB)
    # vLLM: total_gpu_memory × gpu_memory_utilization − (weights + activation peak + non-torch) = KV budget
    budget = int(total * gpu_memory_utilization) - weights - activation - overhead
    per_token = kv_bytes_per_token(model, tp)
    block_bytes = block_size * per_token
    num_blocks = max(0, budget) // block_bytes if block_bytes else 0
    kv_tokens = num_blocks * block_size
    need_blocks = blocks_to_start(model, max_len, block_size, max_num_batched_tokens=tokens,
                                  window_rule=window_rule)
    reason = ""
    if bad_tp := heads_problem(model, tp, engine):  # the engine stops before it sizes the KV cache
        reason = bad_tp
    elif weights + activation + overhead > total * gpu_memory_utilization:
        reason = (f"weights {weights / GIB:.2f} GiB + activation {activation / GIB:.2f} GiB + overhead "
                  f"{overhead / GIB:.2f} GiB exceed {gpu_memory_utilization:.2f} × {total / GIB:.2f} GiB "
                  f"of {gpu.name}")
    elif num_blocks == 0:
        reason = "no GPU memory left for KV cache blocks"
    elif need_blocks > num_blocks:
        if model.sliding_window and window_rule == "v1":
            held = (f"min(sliding window {model.sliding_window} − 1 + max_num_batched_tokens {tokens}, {max_len}) "
                    "tokens, + 1 block")
        else:
            held = f"{kv_tokens_held(model, max_len)} tokens"
        reason = (f"max_model_len {max_len} needs {need_blocks} KV blocks ({held}) but only {num_blocks} "
                  f"({kv_tokens} tokens) fit; lower max_model_len or raise gpu_memory_utilization")
    return VllmBudget(total, gpu_memory_utilization, weights, activation, overhead, budget, per_token,
                      block_size, num_blocks, kv_tokens, max_len, need_blocks, not reason, reason)


# -- naive server ----------------------------------------------------------------------------------------

def prefill_activation_bytes(model: Model, input_tokens: int, *, eager_attention: bool = False,
                             all_logits: bool = False, bytes_per_token: float | None = None, tp: int = 1) -> int:
    """Transient memory of one prompt's forward pass in a plain Transformers model (freed after prefill).

    Defaults follow what KServe's huggingfaceserver runs (kserve v0.15.0 `python/huggingfaceserver/pyproject.toml`:
    transformers >= 4.49; `generative_model.py` loads with `from_pretrained(..., torch_dtype=...)` and no
    `attn_implementation`): Transformers then picks SDPA, whose fused kernels never materialise the L × L
    score matrix, and `generate()` passes `logits_to_keep=1` to models that take it, so only the last
    position's logits are computed (fp32, 4 × vocab bytes). Per prompt token: about a dozen hidden-size
    temporaries (residual, norm, q/k/v/o, the MLP's gate/up: 24 × hidden bytes). `all_logits`: fp32 logits
    for every prompt position (a server calling `forward()` itself, or an older Transformers). `eager_attention`
    (`attn_implementation="eager"`): one layer's score matrix at a time, heads × L² × (2 bytes bf16 + 4 bytes
    fp32 softmax). An estimate: `bytes_per_token`, measured, replaces all but the eager score matrix.
    """
    if model.kind != "llm" or input_tokens <= 0:
        return 0
    if bytes_per_token is not None:
        total = bytes_per_token * input_tokens / tp
    else:
        logits = 4 * model.vocab_size * (input_tokens if all_logits else 1)
        total = (24 * model.hidden_size * input_tokens + logits) / tp
    if eager_attention and model.attention_heads:
        total += model.attention_heads / tp * input_tokens * input_tokens * 6
    return int(total)


def naive_base_bytes(model: Model, overhead_gib: float = DEFAULT_NAIVE_OVERHEAD_GIB, tp: int = 1) -> int:
    """Memory a naive server holds with nothing in flight: weights + CUDA context / allocator overhead."""
    return model.weights_bytes // tp + int(overhead_gib * GIB)


def naive_memory_bytes(model: Model, contexts: list[int], prefilling: list[int] = (), *,
                       overhead_gib: float = DEFAULT_NAIVE_OVERHEAD_GIB, eager_attention: bool = False,
                       all_logits: bool = False, activation_bytes_per_token: float | None = None,
                       tp: int = 1) -> int:
    """Memory in use: base + KV of every in-flight sequence (`contexts`: tokens each holds now) + the
    transient activations of the prompts in `prefilling` (input tokens of each)."""
    kv = kv_bytes_per_token(model, tp) * sum(contexts)
    act = sum(prefill_activation_bytes(model, n, eager_attention=eager_attention, all_logits=all_logits,
                                       bytes_per_token=activation_bytes_per_token, tp=tp) for n in prefilling)
    return naive_base_bytes(model, overhead_gib, tp) + kv + act


def vision_activation_bytes(model: Model, pixels: int, batch: int = 1) -> int:
    """Activation of a vision batch: per-image activation at `reference_pixels`, scaled linearly with pixels
    (convolution and ViT feature maps grow with the image area), times the batch."""
    scale = pixels / model.reference_pixels if model.reference_pixels else 1.0
    return int(model.activation_mib_per_item * MIB * scale * batch)


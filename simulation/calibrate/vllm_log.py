"""Read a vLLM start-up log and derive the memory figures that reproduce its KV cache (observe → calibrate).

Formats read (the figures vLLM logs while sizing its KV cache, `determine_available_memory` and
`kv_cache_utils`; each version prints a subset):

* one line (V0 0.6.6 – 0.8, and V1 at DEBUG): "the current vLLM instance can use total_gpu_memory (79.19GiB) x
  gpu_memory_utilization (0.90) = …", "model weights take 12.55GiB; non_torch_memory takes 0.16GiB;
  PyTorch activation peak memory takes 2.38GiB; the rest of the memory reserved for KV Cache is 56.18GiB.";
* the block of V0 0.6.5: "Memory profiling results:" then "total_gpu_memory 79.22GiB",
  "gpu_memory_utilization 0.90", "model weights take 14.96GiB", "non_torch_memory 1.79GiB",
  "PyTorch activation peak memory 1.26GiB", "available_kv_cache_memory 53.29GiB";
* V1: "Model loading took 14.99 GiB", "Available KV cache memory: 19.37 GiB", "GPU KV cache size: 158,656
  tokens", "Maximum concurrency for 32,768 tokens per request: 4.84x", "Graph capturing finished in 5 secs,
  took 1.31 GiB";
* block counts: "# GPU blocks: N" / "# cuda blocks: N"; V0's "Loading model weights took 7.97 GB" (GiB).

With tensor parallelism every worker logs the same lines; the first of each is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from catalog import GIB, Gpu, Model
from simulation.gpu.memory import (BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, kv_bytes_per_token,
                                   profile_activation_bytes, vllm_budget)
from simulation.gpu.vllm_spec import resolve_batch

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_PATTERNS = {
    "version": [r"vLLM API server version ([0-9][\w.+-]*)", r"LLM engine \(v([0-9][\w.+-]*)\)"],
    "total_gib": [rf"total_gpu_memory \({_NUM}\s*GiB\)", rf"total_gpu_memory\s+{_NUM}\s*GiB"],
    "utilization": [rf"gpu_memory_utilization \({_NUM}\)", rf"gpu_memory_utilization\s+{_NUM}"],
    "weights_gib": [rf"model weights take\s+{_NUM}\s*GiB", rf"Model loading took {_NUM}\s*GiB",
                    rf"Loading model weights took {_NUM}\s*GB"],
    "non_torch_gib": [rf"non_torch_memory(?: takes)?\s+{_NUM}\s*GiB"],
    "activation_gib": [rf"PyTorch activation peak memory(?: takes)?\s+{_NUM}\s*GiB"],
    "kv_gib": [rf"reserved for KV Cache is {_NUM}\s*GiB", rf"available_kv_cache_memory\s+{_NUM}\s*GiB",
               rf"Available KV cache memory:\s*{_NUM}\s*GiB"],
    "gpu_blocks": [rf"# (?:GPU|cuda) blocks: {_NUM}"],
    "kv_tokens": [rf"GPU KV cache size:\s*{_NUM} tokens"],
    "concurrency_len": [rf"Maximum concurrency for {_NUM} tokens per request"],
    "cuda_graph_gib": [rf"Graph capturing finished in {_NUM} secs?, took {_NUM}\s*GiB"],
    "tensor_parallel": [rf"tensor_parallel_size={_NUM}"],
    "batched_tokens": [rf"max_num_batched_tokens={_NUM}"],
    "num_seqs": [rf"max_num_seqs={_NUM}"],
}


@dataclass(frozen=True)
class LogFacts:
    """What one start-up log states (None where it does not)."""

    version: str | None = None
    total_gib: float | None = None
    utilization: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_gib: float | None = None
    kv_gib: float | None = None
    gpu_blocks: int | None = None
    kv_tokens: int | None = None
    concurrency_len: int | None = None
    cuda_graph_gib: float | None = None
    tensor_parallel: int | None = None
    batched_tokens: int | None = None
    num_seqs: int | None = None

    @property
    def scheduler(self) -> str:
        """V0 logs count blocks and print the memory breakdown; V1 logs the KV cache size in tokens."""
        return "v1" if self.kv_tokens is not None else "v0"


# figure → (least, most) a real engine logs; a KV cache of 0 means vLLM found no memory for it and refused to start
_RANGES = {"total_gib": (0.5, 4096), "utilization": (0.01, 1.0), "weights_gib": (0, 4096), "non_torch_gib": (0, 4096),
           "activation_gib": (0, 4096), "kv_gib": (1e-6, 4096), "gpu_blocks": (1, 10**9), "kv_tokens": (1, 10**11),
           "concurrency_len": (1, 10**8), "cuda_graph_gib": (0, 4096), "tensor_parallel": (1, 16),
           "batched_tokens": (1, 10**8), "num_seqs": (1, 10**6)}


def parse_vllm_log(text: str) -> LogFacts:
    """Every figure the log states (first occurrence); raises ValueError when it states no KV cache size or a
    figure no engine logs (a KV cache of 0, a utilization above 1: the log line, the value and the range)."""
    found: dict[str, Any] = {}
    for key, patterns in _PATTERNS.items():
        for pattern in patterns:
            m = re.search(pattern, text)
            if m:
                raw = m.group(m.lastindex) if key == "cuda_graph_gib" else m.group(1)
                found[key] = raw if key == "version" else _number(raw)
                low, high = _RANGES.get(key, (None, None))
                if low is not None and not low <= found[key] <= high:  # inf (400 digits) fails too
                    zero_kv = found[key] == 0 and key in ("kv_gib", "gpu_blocks", "kv_tokens")
                    raise ValueError(f"{m.group(0)[:120]!r}: got {found[key]:g}; expected {low:,}..{high:,}"
                                     + (" (vLLM logs a KV cache of 0 when no memory is left for it: the engine did "
                                        "not start, so there is nothing to calibrate)" if zero_kv else ""))
                break
    facts = LogFacts(**found)
    if facts.kv_gib is None and facts.gpu_blocks is None and facts.kv_tokens is None:
        raise ValueError("no KV cache size found: expected a line such as \"GPU KV cache size: N tokens\", "
                         "\"# GPU blocks: N\", \"Available KV cache memory: X GiB\" or \"reserved for KV Cache is X GiB\"")
    return facts


def _number(raw: str) -> int | float:
    value = float(raw.replace(",", ""))
    return int(value) if value.is_integer() and "." not in raw else value


@dataclass(frozen=True)
class Calibration:
    """Measured figures for the simulation, and how well they (and the priors) reproduce the log."""

    activation_gib: float
    non_torch_gib: float
    utilization: float
    logged_kv_tokens: int
    calibrated_kv_tokens: int
    prior_kv_tokens: int
    notes: tuple[str, ...]

    @property
    def calibrated_error(self) -> float:
        return self.calibrated_kv_tokens / self.logged_kv_tokens - 1

    @property
    def prior_error(self) -> float:
        return self.prior_kv_tokens / self.logged_kv_tokens - 1

    def engine_profile(self) -> dict[str, float]:
        """The stack's `engineProfile:` keys."""
        return {"activationGib": round(self.activation_gib, 3), "nonTorchGib": round(self.non_torch_gib, 3)}


def logged_kv_tokens(facts: LogFacts, model: Model, tp: int = 1, block_size: int = BLOCK_SIZE) -> int:
    """KV tokens the log states, or derives from its block count or KV memory and the model's KV per token."""
    if facts.kv_tokens is not None:
        return facts.kv_tokens
    if facts.gpu_blocks is not None:
        return facts.gpu_blocks * block_size
    block_bytes = block_size * kv_bytes_per_token(model, tp)
    return int(facts.kv_gib * GIB // block_bytes) * block_size


def calibrate(facts: LogFacts, model: Model, gpu: Gpu, *, tp: int | None = None, utilization: float | None = None,
              block_size: int = BLOCK_SIZE) -> Calibration:
    """Activation and non-torch figures that reproduce the log's KV cache on this model and GPU.

    Stated figures are taken as they are. What the log does not break down (V1 prints only the KV size) is
    recovered from vLLM's identity total × utilization − weights − activation − non-torch = KV: the
    activation keeps its prior and the remainder is non-torch. A logged total replaces the GPU's; weights
    that differ from the catalog's (quantisation, another checkpoint) are folded into non-torch, so the
    simulation's budget equals the logged one.
    """
    tp = tp or facts.tensor_parallel or 1
    notes: list[str] = []
    util = facts.utilization or utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    if facts.utilization is None:
        notes.append(f"the log states no gpu_memory_utilization: assumed {util:g}")
    logged = logged_kv_tokens(facts, model, tp, block_size)
    total = facts.total_gib if facts.total_gib is not None else gpu.cuda_total_bytes / GIB
    logged_gib = logged * kv_bytes_per_token(model, tp) / GIB
    if logged_gib > total:
        raise ValueError(f"the log's KV cache, {logged:,} tokens, is {logged_gib:,.1f} GiB per GPU for {model.name} "
                         f"at tensor parallel {tp}: more than the {total:g} GiB of a {gpu.name}; expected the log of "
                         "this model on this GPU (--model/--gpu, or the service's with --stack/--service; --tp)")
    if logged < 1:
        raise ValueError(f"the log's KV cache is {facts.kv_gib:g} GiB, less than one block of {block_size} tokens "
                         f"for {model.name}: expected a KV cache vLLM could start with")
    max_len = min(facts.concurrency_len or model.max_context, logged)
    batched, seqs = resolve_batch(gpu, facts.scheduler, facts.concurrency_len or model.max_context,
                                  facts.batched_tokens, facts.num_seqs)
    prior = vllm_budget(gpu, model, gpu_memory_utilization=util, max_model_len=max_len, block_size=block_size,
                        tp=tp, max_num_batched_tokens=batched, max_num_seqs=seqs)
    if facts.total_gib is not None:
        gpu = replace(gpu, cuda_total_gib=facts.total_gib)
    catalog_weights = model.weights_bytes / tp / GIB
    weights = facts.weights_gib if facts.weights_gib is not None else catalog_weights
    kv_gib = facts.kv_gib if facts.kv_gib is not None else logged * kv_bytes_per_token(model, tp) / GIB
    act = facts.activation_gib
    if act is None:
        act = profile_activation_bytes(model, batched, seqs, tp) / GIB
        notes.append(f"the log states no activation peak: the prior {act:.2f} GiB (profiling {batched} tokens)")
    non_torch = facts.non_torch_gib
    if non_torch is None or facts.activation_gib is None:
        non_torch = gpu.cuda_total_bytes / GIB * util - weights - act - kv_gib
        notes.append(f"non-torch memory (and what else the log does not break down) is the remainder: "
                     f"{non_torch:.2f} GiB")
        if non_torch < 0:
            act, non_torch = max(0.0, act + non_torch), 0.0
            notes.append("the remainder is negative: the activation prior is lowered to fit; check "
                         "--gpu-memory-utilization")
    non_torch += weights - catalog_weights  # the simulation subtracts the catalog's weights
    non_torch = max(0.0, non_torch)
    calibrated = vllm_budget(gpu, model, gpu_memory_utilization=util, max_model_len=max_len, activation_gib=act,
                             overhead_gib=non_torch, block_size=block_size, tp=tp)
    return Calibration(act, non_torch, util, logged, calibrated.kv_tokens, prior.kv_tokens, tuple(notes))

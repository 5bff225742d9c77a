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
* block counts: "# GPU blocks: N" / "# cuda blocks: N"; V0's "Loading model weights took 7.97 GB" (GiB);
* the engine's config line ("... max_seq_len=8192, ... tensor_parallel_size=1, ...") or V1's "non-default args:
  {'max_model_len': 4096, ...}".

With tensor parallelism every worker logs the same lines; the first of each is used.

A log is the measurement of one model on one GPU at one tensor parallelism. What it states of them is checked
against the target's (`check_log_fits`) before anything is derived, and the derived profile must reproduce the
logged KV cache on the target's GPU: a log of another model or GPU is refused (`LogMismatch`), never calibrated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from catalog import DEFAULT, GIB, Catalog, Gpu, Model
from simulation.gpu.memory import (BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, kv_bytes_per_token,
                                   profile_activation_bytes, vllm_budget)
from simulation.gpu.vllm_spec import chunks, resolve_batch

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
    "max_model_len": [rf"max_seq_len={_NUM}", rf"'max_model_len': {_NUM}", rf"max_model_len={_NUM}"],
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
    max_model_len: int | None = None

    @property
    def model_len(self) -> int | None:
        """The engine's max_model_len: stated in its config line, or as the tokens per request of its
        "Maximum concurrency" line (vLLM divides the KV tokens by max_model_len there)."""
        return self.max_model_len or self.concurrency_len

    @property
    def scheduler(self) -> str:
        """V0 logs count blocks and print the memory breakdown; V1 logs the KV cache size in tokens."""
        return "v1" if self.kv_tokens is not None else "v0"


# figure → (least, most) a real engine logs; a KV cache of 0 means vLLM found no memory for it and refused to start
_RANGES = {"total_gib": (0.5, 4096), "utilization": (0.01, 1.0), "weights_gib": (0, 4096), "non_torch_gib": (0, 4096),
           "activation_gib": (0, 4096), "kv_gib": (1e-6, 4096), "gpu_blocks": (1, 10**9), "kv_tokens": (1, 10**11),
           "concurrency_len": (1, 10**8), "cuda_graph_gib": (0, 4096), "tensor_parallel": (1, 16),
           "batched_tokens": (1, 10**8), "num_seqs": (1, 10**6), "max_model_len": (1, 10**8)}


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
                         "\"# GPU blocks: N\", \"Available KV cache memory: X GiB\" "
                         "or \"reserved for KV Cache is X GiB\"")
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


# How far what a log states may be from the target's model and GPU and still be a log of them.
GPU_TOTAL_TOLERANCE_GIB = 1.0
"""How much less than the catalog's CUDA total a log of that board may state (`_total_window`). CUDA's total is
nvidia-smi's less what the driver reserves, and the reservation moves with the driver: vLLM logs show H100s at
79.19–79.22 GiB and L40S boards at ~44.3–44.4 GiB, 0.43–0.7 GiB under nvidia-smi's 79.65 / 44.99, where the
catalog assumes 0.45 (`Gpu.cuda_total_bytes`). Never more than nvidia-smi's total: that is the board. A real
change of the memory is larger than the tolerance: ECC on a GDDR6 board takes 1/16 of it (1.5 GiB of a 24 GB
card, 3 GiB of an L40S), and catalog GPUs of different memory differ by 5 GiB or more. (Boards with the same
memory, A10G and L4, cannot be told apart, nor need to be: the budget is the same.)"""
WEIGHTS_TOLERANCE = 0.05
"""Loading allocates the parameters and a few buffers (rotary caches: tens of MiB); under tensor parallelism
the norms, and the KV projections when there are fewer KV heads than GPUs, are replicated (~2 % of a 70B model
at tp 16). The published logs are 0.0–0.2 % off the catalog. Neighbouring models differ by more: Llama-2-7B
12.55, Mistral-7B 13.49, Qwen2.5-7B 14.19, Llama-3-8B 14.96 GiB."""
KV_PER_TOKEN_TOLERANCE = 0.05  # + the log's rounding of its KV GiB and one partly used block (_kv_per_token)
REPRODUCE_TOLERANCE = 0.01
"""The calibration is vLLM's own identity, so a log of this model on this GPU is reproduced to the block (the
three published logs: within 0.01 %); what is left is the rounding of the figures it prints (0.01 GiB each,
`LOGGED_GIB_STEP`), which the tolerance also allows on a small KV cache. Beyond it, a figure of the profile would
have to be negative to reproduce the log: its figures do not add up for the target."""
LOGGED_GIB_STEP = 0.01  # vLLM prints its memory figures in GiB to two decimals
_ANOTHER_MODEL = "a log of another model"


class LogMismatch(ValueError):
    """The log states figures of another model, GPU or tensor parallelism than the target's (one message per
    contradiction, each saying what the log states, what the target has and what to do): nothing is calibrated."""

    def __init__(self, contradictions: list[str]) -> None:
        self.contradictions = tuple(contradictions)
        super().__init__("; ".join(contradictions))


def _total_window(gpu: Gpu) -> tuple[float, float]:
    """(least, most) GiB a log of this GPU states as total_gpu_memory: its CUDA total less the tolerance, up to
    its nvidia-smi total (GPU_TOTAL_TOLERANCE_GIB)."""
    cuda = gpu.cuda_total_bytes / GIB
    return cuda - GPU_TOTAL_TOLERANCE_GIB, max(gpu.memory_gib, cuda)


def _kv_per_token(facts: LogFacts, block_size: int) -> tuple[float, float] | None:
    """(bytes per token, relative tolerance) of a log that states both its KV memory and its tokens or blocks:
    vLLM floors the memory to whole blocks and prints the GiB rounded."""
    tokens = facts.kv_tokens if facts.kv_tokens is not None else \
        facts.gpu_blocks * block_size if facts.gpu_blocks is not None else None
    if facts.kv_gib is None or not tokens:
        return None
    tolerance = KV_PER_TOKEN_TOLERANCE + LOGGED_GIB_STEP / 2 / facts.kv_gib + block_size / tokens
    return facts.kv_gib * GIB / tokens, tolerance


def _model_contradictions(facts: LogFacts, model: Model, tp: int, block_size: int) -> list[str]:
    """What the log states of its model that `model` at tensor parallel `tp` is not; [] when it fits."""
    found = []
    if model.kind != "llm":
        return [f"expected a vLLM log of an LLM; {model.name} is a {model.kind} model (vLLM's log sizes a KV cache)"]
    if facts.model_len is not None and model.max_context and facts.model_len > model.max_context:
        found.append(f"the log's max_model_len is {facts.model_len:,} tokens; expected at most {model.name}'s "
                     f"context, {model.max_context:,} tokens (vLLM refuses a longer max_model_len): {_ANOTHER_MODEL}; "
                     f"if you serve it with a longer context (rope scaling), set "
                     f"catalog.models.{model.name}.maxContext in the stack")
    if facts.weights_gib is not None:
        expected = model.weights_bytes / tp / GIB
        if abs(facts.weights_gib / expected - 1) > WEIGHTS_TOLERANCE:
            found.append(f"the log's model weights take {facts.weights_gib:g} GiB per GPU; expected {model.name}'s "
                         f"{expected:.2f} GiB at tensor parallel {tp} (±{WEIGHTS_TOLERANCE:.0%}): {_ANOTHER_MODEL}, "
                         f"or of a quantised checkpoint (set catalog.models.{model.name}.weightsGib in the "
                         "stack for one)")
    per_token = _kv_per_token(facts, block_size)
    expected_kv = kv_bytes_per_token(model, tp)
    if per_token is not None and abs(per_token[0] / expected_kv - 1) > per_token[1]:
        found.append(f"the log's KV cache holds {logged_kv_tokens(facts, model, tp, block_size):,} tokens in "
                     f"{facts.kv_gib:g} GiB, {per_token[0] / 1024:,.0f} KiB per token; expected {model.name}'s "
                     f"{expected_kv / 1024:,.0f} KiB at tensor parallel {tp} (2 × layers × KV heads × head dim × "
                     f"{model.dtype_bytes} bytes, ±{KV_PER_TOKEN_TOLERANCE:.0%}): {_ANOTHER_MODEL}, or of an "
                     "fp8 KV cache, which the simulation does not model")
    return found


def check_log_fits(facts: LogFacts, model: Model, gpu: Gpu, tp: int, *, stated_tp: bool = True,
                   catalog: Catalog | None = None, block_size: int = BLOCK_SIZE) -> None:
    """Raise LogMismatch when what the log states contradicts the target: its tensor parallelism (`stated_tp`:
    the target's tp was given, not taken from the log), its GPU's CUDA total, and its model's context, weights
    per GPU and KV bytes per token. Each message names the catalog entries the log does fit, where any does."""
    catalog = catalog or DEFAULT
    found = []
    if stated_tp and facts.tensor_parallel is not None and facts.tensor_parallel != tp:
        found.append(f"the log ran tensor_parallel_size={facts.tensor_parallel}; expected the target's tensor "
                     f"parallelism, {tp}: the weights and KV cache per GPU differ")
    low, high = _total_window(gpu)
    if facts.total_gib is not None and not low <= facts.total_gib <= high:
        fits = sorted(g.name for g in catalog.gpus.values()
                      if _total_window(g)[0] <= facts.total_gib <= _total_window(g)[1])
        found.append(f"the log's GPU has total_gpu_memory {facts.total_gib:g} GiB; expected {gpu.name}'s CUDA total, "
                     f"{gpu.cuda_total_bytes / GIB:.2f} GiB ({low:.2f}–{high:.2f}: up to "
                     f"{GPU_TOTAL_TOLERANCE_GIB:g} GiB less with another driver, never more than nvidia-smi's total): "
                     "a log of another GPU" + (f" (it fits the catalog's {', '.join(fits)})" if fits else "")
                     + f"; if your {gpu.name} reports another total (ECC off, MIG), set "
                     f"catalog.gpus.{gpu.name}.cudaTotalGib in the stack")
    model_found = _model_contradictions(facts, model, tp, block_size)
    if model_found and model.kind == "llm":
        fits = sorted(m.name for m in catalog.models.values()
                      if m.kind == "llm" and not _model_contradictions(facts, m, tp, block_size))
        if fits:
            model_found[0] = model_found[0].replace(_ANOTHER_MODEL, f"{_ANOTHER_MODEL} (it fits the catalog's "
                                                    f"{', '.join(fits)})", 1)
    found += model_found
    if found:
        raise LogMismatch(found)


def calibrate(facts: LogFacts, model: Model, gpu: Gpu, *, tp: int | None = None, utilization: float | None = None,
              block_size: int = BLOCK_SIZE, catalog: Catalog | None = None) -> Calibration:
    """Activation and non-torch figures that reproduce the log's KV cache on this model and GPU.

    The log must be one of this model on this GPU (`check_log_fits`; `tp` None: the log's tensor parallelism).
    Stated figures are taken as they are. What the log does not break down (V1 prints only the KV size) is
    recovered from vLLM's identity total × utilization − weights − activation − non-torch = KV on the log's
    total: the activation keeps its prior and the remainder is non-torch. Where the log's weights or GPU total
    differ (within the tolerances) from the catalog's, the difference is folded into non-torch, so that the
    simulation's budget on the catalog's GPU equals the logged one; the derived profile must reproduce the
    logged KV tokens there within REPRODUCE_TOLERANCE (else LogMismatch).
    """
    stated_tp = tp is not None
    tp = tp or facts.tensor_parallel or 1
    check_log_fits(facts, model, gpu, tp, stated_tp=stated_tp, catalog=catalog, block_size=block_size)
    notes: list[str] = []
    util = facts.utilization or utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    if facts.utilization is None:
        notes.append(f"the log states no gpu_memory_utilization: assumed {util:g}")
    logged = logged_kv_tokens(facts, model, tp, block_size)
    gpu_total = gpu.cuda_total_bytes / GIB
    logged_gib = logged * kv_bytes_per_token(model, tp) / GIB
    if logged_gib > gpu_total:
        raise ValueError(f"the log's KV cache, {logged:,} tokens, is {logged_gib:,.1f} GiB per GPU for {model.name} "
                         f"at tensor parallel {tp}: more than the {gpu_total:g} GiB of a {gpu.name}; expected the log "
                         "of this model on this GPU (--model/--gpu, or the service's with --stack/--service; --tp)")
    if logged < 1:
        raise ValueError(f"the log's KV cache is {facts.kv_gib:g} GiB, less than one block of {block_size} tokens "
                         f"for {model.name}: expected a KV cache vLLM could start with")
    max_len = min(facts.model_len or model.max_context, logged)
    model_len = facts.model_len or model.max_context
    batched, seqs = resolve_batch(gpu, facts.scheduler, model_len, facts.batched_tokens, facts.num_seqs,
                                  chunks(facts.scheduler, model, model_len))
    prior = vllm_budget(gpu, model, gpu_memory_utilization=util, max_model_len=max_len, block_size=block_size,
                        tp=tp, max_num_batched_tokens=batched, max_num_seqs=seqs)
    log_total = facts.total_gib if facts.total_gib is not None else gpu_total
    catalog_weights = model.weights_bytes / tp / GIB
    weights = facts.weights_gib if facts.weights_gib is not None else catalog_weights
    kv_gib = facts.kv_gib if facts.kv_gib is not None else logged * kv_bytes_per_token(model, tp) / GIB
    act = facts.activation_gib
    if act is None:
        act = profile_activation_bytes(model, batched, seqs, tp) / GIB
        notes.append(f"the log states no activation peak: the prior {act:.2f} GiB (profiling {batched} tokens)")
    act_before = act  # the logged peak, or the prior before it is lowered to fit
    non_torch = facts.non_torch_gib
    if non_torch is None or facts.activation_gib is None:
        non_torch = log_total * util - weights - act - kv_gib
        notes.append(f"non-torch memory (and what else the log does not break down) is the remainder: "
                     f"{non_torch:.2f} GiB")
        if non_torch < 0:
            act, non_torch = max(0.0, act + non_torch), 0.0
            notes.append("the remainder is negative: the activation prior is lowered to fit; check "
                         "--gpu-memory-utilization")
    # the simulation subtracts the catalog's weights from the catalog GPU's total
    folded = (weights - catalog_weights) + (gpu_total - log_total) * util
    if abs(gpu_total - log_total) >= LOGGED_GIB_STEP:
        notes.append(f"the log's GPU total {log_total:g} GiB is {log_total - gpu_total:+.2f} GiB off the catalog's "
                     f"{gpu.name} ({gpu_total:.2f}): folded into non-torch with the weights' difference "
                     f"({folded:+.2f} GiB), so that the simulation's budget equals the logged one")
    non_torch = max(0.0, non_torch + folded)
    calibrated = vllm_budget(gpu, model, gpu_memory_utilization=util, max_model_len=max_len, activation_gib=act,
                             overhead_gib=non_torch, block_size=block_size, tp=tp)
    cal = Calibration(act, non_torch, util, logged, calibrated.kv_tokens, prior.kv_tokens, tuple(notes))
    rounding = 5 * LOGGED_GIB_STEP / 2 * GIB / kv_bytes_per_token(model, tp) + block_size  # five figures, one block
    if abs(cal.calibrated_kv_tokens - logged) > max(REPRODUCE_TOLERANCE * logged, rounding):
        space = gpu_total * util - catalog_weights - kv_gib
        why = (f": {util:g} × {gpu_total:.2f} GiB less the weights ({catalog_weights:.2f}) and the logged KV cache "
               f"({kv_gib:.2f}) leaves {space:.2f} GiB for the activation peak ({act_before:.2f}) and non-torch memory")
        hint = (" (the log states no gpu_memory_utilization: pass the engine's with --gpu-memory-utilization)"
                if facts.utilization is None else "")
        if log_total > gpu_total + LOGGED_GIB_STEP:
            hint += (f"; the log's GPU reports {log_total:g} GiB, more than the catalog's {gpu.name} "
                     f"({gpu_total:.2f}): set catalog.gpus.{gpu.name}.cudaTotalGib: {log_total:g} in the stack")
        raise LogMismatch([f"the profile derived from the log reproduces {cal.calibrated_kv_tokens:,} KV tokens on "
                           f"{gpu.name}, {cal.calibrated_error:+.1%} off the log's {logged:,}; expected within "
                           f"±{REPRODUCE_TOLERANCE:.0%}: the log's figures do not add up for {model.name} on "
                           f"{gpu.name} at tensor parallel {tp}{why}{hint}"])
    return cal

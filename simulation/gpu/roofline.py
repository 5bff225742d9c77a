"""LLM and vision service times from a roofline model of the GPU (pure).

A forward pass is bounded below by two things: moving the bytes it touches through HBM
(bytes / bandwidth) and doing its arithmetic (FLOPs / peak FLOP/s). The roofline takes the larger:

* **Prefill** of P prompt tokens (all processed in one pass) is compute-bound for any useful P:
  FLOPs ≈ 2 × parameters × P (one multiply-add per weight per token) + attention 2 × 2 × layers × heads
  × head_dim × P² / 2 (QKᵀ and AV, causal half; heads × head_dim is `Model.attention_width`, the hidden size
  for Llama but not for Qwen3-32B or Gemma-2); it can never be faster than reading the weights once.
* **Decode** step of a batch of B sequences produces one token for each: it reads all the weights once
  and the KV cache of every sequence in the batch (memory-bound at the batch sizes serving uses), and does
  2 × parameters × B FLOPs. So the step time — the inter-token latency (ITL) every sequence in the batch
  sees — grows with B and with context length, and falls with memory bandwidth.

This is the model of Yuan et al., "LLM Inference Unveiled: Survey and Roofline Model Insights" (2024) and
of the analytic predictors in microsoft/vidur (which replace it with profiled kernels). Measured systems
reach only a fraction of the peaks: `Efficiency(memory, compute)` scales bandwidth and FLOP/s, and a fixed
per-step overhead covers scheduling, sampling and kernel launches. The defaults put a 7–8B bf16 model's
batch-1 ITL in the priors of ../shared/reference/gpu-memory-and-models.md (ITL H100 10–15 ms, A100 15–25 ms,
L40S 25–35 ms; the roofline gives 11, 16 and 34 ms); calibrate with `calibrate_memory_efficiency` from one
measured ITL. Its TTFT is not in them: a 256-token prompt's prefill pass takes 18, 36 and 41 ms here against the
table's 60–120, 100–180 and 180–280 ms (about 3–7× below). Those are client-side figures from benchmarks
(llm-d-inference-sim's latency profiles, secondary, load and settings not stated), so they hold more than a
prefill pass: the HTTP round trip and the OpenAI server's handling of the request before the engine sees it and
of the first token after it (not simulated anywhere), and, under a benchmark's load, the wait behind other
requests' steps (the simulation has it, but not a batch-1 figure). The engine's own TTFT (`ttfb_s`) runs from
hand-over to the end of the prefill pass; the gate's TTFT adds the simulated queueing in front of it (queue-proxy,
activator, the engine's queue). The defaults were not moved to the TTFT priors:
fit the prefill to your own TTFTs (`calibrate_compute_efficiency`, or `preflight calibrate bench`, which fits
compute efficiency and prefill overhead to `vllm bench serve` results); until then p99 TTFT terms at low load,
and prefill-bound queues, come out optimistic.

**Tensor parallelism** (KServe runs vLLM with `--tensor-parallel-size` = the pod's GPUs) splits every weight
matrix over tp GPUs, so bandwidth and FLOP/s add up, but each layer then all-reduces its activations twice,
after attention and after the MLP (Megatron-LM's column/row split; "2 allreduces per layer" in vLLM's custom
all-reduce write-up, vllm-project/vllm#2192). A pass over T tokens pays 2 × layers all-reduces of
T × hidden × dtype bytes. A ring all-reduce sends and receives 2(tp − 1)/tp of the buffer over each GPU's link
(nccl-tests `doc/PERFORMANCE.md`: bus bandwidth = algorithm bandwidth × 2(n − 1)/n, comparable to the link's
one-way peak), at `Gpu.interconnect_gbps` (one direction) × `Efficiency.interconnect`, plus a fixed latency
per all-reduce. vLLM does not overlap them with compute by default (its async-TP compilation pass is opt-in:
`PassConfig.enable_async_tp = False`), so a pass costs max(memory, compute) + overhead + communication
(`tp_comm_time`, precomputed per pass and per token in `StepCost`; exactly 0 with tp = 1). Priors (calibrate
`Efficiency.interconnect` and `allreduce_latency_s`):

* link efficiency: NVLink 0.80 (A100 NVLink: "480GB/s effective bidirectional" of 600 in vLLM's write-up);
  PCIe 0.65 (Gen4 x16 with peer-to-peer: 41 of 64 GB/s bidirectional in `p2pBandwidthLatencyTest`,
  tinygrad/open-gpu-kernel-modules#6).
* latency per all-reduce depends on what vLLM runs (`uses_custom_all_reduce`): its custom all-reduce unless
  `--disable-custom-all-reduce` (`Efficiency.custom_all_reduce` False), only at tp 2, 4, 6 or 8
  (`CustomAllreduce._SUPPORTED_WORLD_SIZES`) and only on fully NVLink-connected GPUs or exactly two PCIe GPUs
  (`custom_all_reduce.py`: "not supported on more than two PCIe-only GPUs"); NCCL otherwise
  (`cuda_communicator.py: all_reduce` falls through to PyNCCL).
  NVLink, custom all-reduce: 10 µs, flat in tp (one-shot for small buffers: 9–12 µs on H100 at tp 2/4/8 up
  to 32 KB, sgl-project/sglang#2904). NVLink, NCCL: 20 µs, flat in tp (NCCL's small all-reduce inside a CUDA
  graph: vLLM's `benchmarks/kernels/benchmark_device_communicators.py` measured PyNCCL at 21–23 µs where the
  custom one-shot took 10–13 µs, a 512 KiB bf16 all-reduce at tp 4 and 6, vllm-project/vllm#24532 and #24111;
  graph-captured PyNCCL 16.8–20.3 µs from 2 KiB to 256 KiB over 8 H200, sgl-project/sglang#22734; nccl-tests
  `all_reduce_perf` ~22 µs at 4 B200 GPUs and ~9 µs at 2 with NCCL 2.27's symmetric memory,
  NVIDIA/nccl-tests#333, ~6 µs on 2 H100 with CUDA graphs, NVIDIA/nccl#1259 — so the prior overstates tp 2).
  PCIe: 2(tp − 1) hops × 4 µs (8 µs at tp 2, 24 µs at tp 4), NCCL's ring, whose small all-reduces take
  ~6–15 µs between two PCIe GPUs in nccl-tests logs.
  At tp 2 on PCIe vLLM runs its custom all-reduce where the GPUs have peer-to-peer access (it checks; L40S
  nodes are reported without, ai-dynamo/aiconfigurator#1346); no measurement separates the two there, so one
  prior serves both and `--disable-custom-all-reduce` leaves PCIe unchanged. An explicit
  `allreduce_latency_s` replaces every prior.

Simplifications: no quantisation; attention FLOPs use the full context (no sliding window); a decode step's
time is frozen at the batch's context when the batch last changed (the simulation's piecewise-constant step
time); tensor parallelism: one all-reduce algorithm for every buffer size (latency + bytes / bus bandwidth: no
switch from one-shot to two-shot or NCCL at 8 MiB, no NVLink SHARP, no torch symmetric-memory all-reduce
that newer vLLM releases use for some sizes on Hopper and Blackwell, vllm#24111), the vocabulary-parallel
embedding's all-reduce and the logits gather left out (two collectives beside 2 × layers), decode batches not padded to
CUDA-graph sizes, no communication when the model's `hidden_size` is unknown (0).
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog import NVLINK, PCIE, Gpu, Model
from simulation.gpu.memory import kv_bytes_per_token


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the data-sheet peaks a real engine reaches, and fixed per-pass overheads (seconds)."""

    memory: float = 0.6  # achieved / peak HBM bandwidth in decode
    compute: float = 0.5  # achieved / peak bf16 FLOP/s in prefill (MFU)
    step_overhead_s: float = 0.003  # per decode step: scheduler, sampler, launches (vLLM ~2–5 ms)
    prefill_overhead_s: float = 0.010  # per prefill pass: tokenisation, scheduling, first sampling
    interconnect: float | None = None  # achieved all-reduce bus bandwidth / link peak; None = the link's prior
    allreduce_latency_s: float | None = None  # fixed cost of one all-reduce (tp > 1); None = the link's prior
    custom_all_reduce: bool = True  # vLLM may run its custom all-reduce (False: --disable-custom-all-reduce)


DEFAULT_EFFICIENCY = Efficiency()
LINK_EFFICIENCY = {NVLINK: 0.80, PCIE: 0.65}  # priors (module docstring)
NVLINK_ALLREDUCE_S = 10e-6  # one all-reduce over NVLink (vLLM's custom one-shot all-reduce)
NCCL_NVLINK_ALLREDUCE_S = 20e-6  # one small NCCL all-reduce over NVLink / NVSwitch
PCIE_HOP_S = 4e-6  # one step of NCCL's ring over PCIe; an all-reduce takes 2(tp − 1) of them
CUSTOM_ALL_REDUCE_SIZES = (2, 4, 6, 8)  # vLLM CustomAllreduce._SUPPORTED_WORLD_SIZES


def _bandwidth(gpu: Gpu, eff: Efficiency, tp: int) -> float:
    return gpu.bandwidth_gbps * 1e9 * eff.memory * tp  # bytes/s over all tensor-parallel GPUs


def _flops(gpu: Gpu, eff: Efficiency, tp: int) -> float:
    return gpu.bf16_tflops * 1e12 * eff.compute * tp


def uses_custom_all_reduce(gpu: Gpu, tp: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> bool:
    """Whether vLLM runs its custom all-reduce over these tp GPUs (module docstring), else NCCL."""
    return (eff.custom_all_reduce and tp in CUSTOM_ALL_REDUCE_SIZES
            and (gpu.link[0] == NVLINK or tp == 2))


def allreduce_latency_s(gpu: Gpu, tp: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """Fixed seconds of one all-reduce over tp GPUs: `eff.allreduce_latency_s`, else the prior of the link and
    of the algorithm vLLM runs over it (`uses_custom_all_reduce`)."""
    if tp <= 1:
        return 0.0
    if eff.allreduce_latency_s is not None:
        return eff.allreduce_latency_s
    if gpu.link[0] == NVLINK:
        return NVLINK_ALLREDUCE_S if uses_custom_all_reduce(gpu, tp, eff) else NCCL_NVLINK_ALLREDUCE_S
    return 2 * (tp - 1) * PCIE_HOP_S  # NCCL's ring; the custom all-reduce at tp 2 shares the prior


def tp_comm_coefficients(model: Model, gpu: Gpu, tp: int, eff: Efficiency = DEFAULT_EFFICIENCY
                         ) -> tuple[float, float]:
    """(seconds per pass, seconds per token) of a pass's tensor-parallel all-reduces: 2 × layers of them, each
    latency + 2(tp − 1)/tp × tokens × hidden × dtype bytes / (link one-way peak × efficiency). (0, 0) at tp 1."""
    if tp <= 1 or not model.hidden_size:
        return 0.0, 0.0
    kind, gbps = gpu.link
    link = eff.interconnect if eff.interconnect is not None else LINK_EFFICIENCY[kind]
    all_reduces = 2 * model.layers
    ring_bytes_per_token = 2 * (tp - 1) / tp * model.hidden_size * model.dtype_bytes
    return (all_reduces * allreduce_latency_s(gpu, tp, eff),
            all_reduces * ring_bytes_per_token / (gbps * 1e9 * link))


def tp_comm_time(model: Model, gpu: Gpu, tokens: float, *, eff: Efficiency = DEFAULT_EFFICIENCY,
                 tp: int = 1) -> float:
    """Seconds a pass over `tokens` tokens spends in tensor-parallel all-reduces (0.0 with tp = 1)."""
    per_pass, per_token = tp_comm_coefficients(model, gpu, tp, eff)
    return per_pass + per_token * tokens


def prefill_flops(model: Model, input_tokens: int) -> float:
    """FLOPs of one prompt's prefill: 2 × params × P + causal attention
    (2 × 2 × layers × heads × head_dim × P²/2)."""
    linear = model.flops_per_token * input_tokens
    attention = 2.0 * model.layers * model.attention_width * input_tokens * input_tokens
    return linear + attention


def prefill_time(model: Model, gpu: Gpu, input_tokens: int | list[int], *, eff: Efficiency = DEFAULT_EFFICIENCY,
                 tp: int = 1) -> float:
    """Seconds to prefill one prompt (or several batched into one pass): max(compute, weights read) + overhead
    + the tensor-parallel all-reduces of its tokens."""
    prompts = input_tokens if isinstance(input_tokens, list) else [input_tokens]
    flops = sum(prefill_flops(model, p) for p in prompts)
    kv_write = kv_bytes_per_token(model) * sum(prompts)
    memory_s = (model.weights_bytes + kv_write) / _bandwidth(gpu, eff, tp)
    compute_s = flops / _flops(gpu, eff, tp)
    return max(memory_s, compute_s) + eff.prefill_overhead_s + tp_comm_time(model, gpu, sum(prompts), eff=eff, tp=tp)


def decode_step_time(model: Model, gpu: Gpu, batch: int, context_tokens: int | None = None, *,
                     eff: Efficiency = DEFAULT_EFFICIENCY, tp: int = 1) -> float:
    """Seconds for one decode step of `batch` sequences holding `context_tokens` tokens in total (KV read).

    bytes = weights + KV bytes/token × Σ context;
    FLOPs = 2 × params × batch + 4 × layers × heads × head_dim × Σ context;
    plus the tensor-parallel all-reduces of `batch` tokens. `context_tokens` defaults to 1,024 per sequence.
    """
    if batch <= 0:
        return 0.0
    ctx = context_tokens if context_tokens is not None else 1024 * batch
    bytes_read = model.weights_bytes + kv_bytes_per_token(model) * ctx
    flops = model.flops_per_token * batch + 4.0 * model.layers * model.attention_width * ctx
    return (max(bytes_read / _bandwidth(gpu, eff, tp), flops / _flops(gpu, eff, tp)) + eff.step_overhead_s
            + tp_comm_time(model, gpu, batch, eff=eff, tp=tp))


def request_latency(model: Model, gpu: Gpu, input_tokens: int, output_tokens: int, batch: int = 1, *,
                    eff: Efficiency = DEFAULT_EFFICIENCY, tp: int = 1) -> tuple[float, float]:
    """(TTFT, end-to-end) for one request alone on the GPU, or in a steady batch of `batch` similar ones."""
    ttft = prefill_time(model, gpu, input_tokens, eff=eff, tp=tp)
    mid_context = (input_tokens + output_tokens / 2) * batch
    itl = decode_step_time(model, gpu, batch, int(mid_context), eff=eff, tp=tp)
    return ttft, ttft + max(0, output_tokens - 1) * itl


def calibrate_memory_efficiency(model: Model, gpu: Gpu, measured_itl_s: float, batch: int = 1,
                                context_tokens: int | None = None, *, eff: Efficiency = DEFAULT_EFFICIENCY,
                                tp: int = 1) -> float:
    """The `Efficiency.memory` that makes `decode_step_time` equal a measured ITL (keeps the step overhead and
    the tensor-parallel communication)."""
    ctx = context_tokens if context_tokens is not None else 1024 * batch
    bytes_read = model.weights_bytes + kv_bytes_per_token(model) * ctx
    fixed_s = eff.step_overhead_s + tp_comm_time(model, gpu, batch, eff=eff, tp=tp)
    transfer_s = measured_itl_s - fixed_s
    if transfer_s <= 0:
        raise ValueError(f"measured ITL {measured_itl_s}s is not above the step overhead and tensor-parallel "
                         f"communication {fixed_s:.6f}s")
    return bytes_read / (transfer_s * gpu.bandwidth_gbps * 1e9 * tp)


def calibrate_compute_efficiency(model: Model, gpu: Gpu, measured_prefill_s: float, input_tokens: int, *,
                                 eff: Efficiency = DEFAULT_EFFICIENCY, tp: int = 1) -> float:
    """The `Efficiency.compute` (MFU) that makes `prefill_time` equal a measured TTFT for one prompt (keeps the
    overhead and the tensor-parallel communication)."""
    fixed_s = eff.prefill_overhead_s + tp_comm_time(model, gpu, input_tokens, eff=eff, tp=tp)
    compute_s = measured_prefill_s - fixed_s
    if compute_s <= 0:
        raise ValueError(f"measured prefill {measured_prefill_s}s is not above the overhead and tensor-parallel "
                         f"communication {fixed_s:.6f}s")
    return prefill_flops(model, input_tokens) / (compute_s * gpu.bf16_tflops * 1e12 * tp)


# -- vision (Triton-style batches) --------------------------------------------------------------------------

def vision_batch_time(model: Model, gpu: Gpu, pixels_per_item: list[int], *,
                      eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """Seconds for one batched forward pass of a vision model: FLOPs scale with each image's pixel count
    (relative to `reference_pixels`); never faster than reading the weights once."""
    if not pixels_per_item:
        return 0.0
    flops = sum(model.gflops_per_item * 1e9 * p / model.reference_pixels for p in pixels_per_item)
    compute_s = flops / _flops(gpu, eff, 1)
    memory_s = model.weights_bytes / _bandwidth(gpu, eff, 1)
    return max(compute_s, memory_s) + eff.step_overhead_s


# -- one engine step mixing decode tokens and prefill chunks (vLLM V1) --------------------------------------

@dataclass(frozen=True)
class StepCost:
    """The roofline of one forward pass over a mixed batch, its coefficients precomputed (a hot path).

    A V1 step (`vllm/v1/core/sched/scheduler.py`) runs decode tokens and prefill chunks in one pass:
    bytes = weights + KV bytes/token × kv_tokens (the KV it reads and writes), FLOPs = 2 × params × tokens
    + 4 × layers × heads × head_dim × attn, where attn is Σ over the step's tokens of the context each attends to
    (a decode token: its sequence's context; a chunk of c tokens after p cached ones: c × (p + c/2)). A step
    with prefill tokens pays `prefill_overhead_s`, a decode-only step `step_overhead_s`; with tp > 1 every
    step adds its all-reduces, `comm_per_step_s` + `comm_per_token_s` × tokens (`tp_comm_coefficients`).
    With one prompt and nothing else it equals `prefill_time`, with decode tokens only `decode_step_time` (tested).
    """

    mem_base_s: float
    mem_per_kv_s: float
    cmp_per_token_s: float
    cmp_per_attn_s: float
    step_overhead_s: float
    prefill_overhead_s: float
    comm_per_step_s: float = 0.0
    comm_per_token_s: float = 0.0

    @classmethod
    def of(cls, model: Model, gpu: Gpu, eff: Efficiency = DEFAULT_EFFICIENCY, tp: int = 1) -> "StepCost":
        bw, peak = _bandwidth(gpu, eff, tp), _flops(gpu, eff, tp)
        return cls(model.weights_bytes / bw, kv_bytes_per_token(model) / bw, model.flops_per_token / peak,
                   4.0 * model.layers * model.attention_width / peak, eff.step_overhead_s, eff.prefill_overhead_s,
                   *tp_comm_coefficients(model, gpu, tp, eff))

    def time(self, tokens: float, kv_tokens: float, attn: float, prefill: bool) -> float:
        memory_s = self.mem_base_s + self.mem_per_kv_s * kv_tokens
        compute_s = self.cmp_per_token_s * tokens + self.cmp_per_attn_s * attn
        over = self.prefill_overhead_s if prefill else self.step_overhead_s
        return ((memory_s if memory_s > compute_s else compute_s) + over
                + (self.comm_per_step_s + self.comm_per_token_s * tokens))

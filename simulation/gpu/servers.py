"""GPU model servers for the simulation: `vllm` (pre-allocating, continuous batching), `naive` (memory grows
with what is in flight; CUDA OOM) and `triton` (dynamic batching for vision models).

All three implement the `simulation.server.ModelServer` contract. Time advances by one scheduled call per
pod (`simulation.clock.call_later`), never one event per token: the LLM servers keep per-pod state (who is
waiting, prefilling, decoding and how many tokens each has) and reschedule a single "next change" call
whenever the batch changes — an arrival, a prefill finishing, a sequence finishing, an OOM. Between changes
the decode step time is constant (piecewise-constant, computed from the roofline at the segment start), so
progress is `elapsed / step` tokens for every sequence in the batch.

Input caps (issue 4 item 5, the guides' guardrail "비정상 요청 1개가 GPU를 터뜨리는 사고"): a request over
`max_input_tokens` / `max_new_tokens` (LLM) or `max_pixels` (vision) is answered 400 by `check()` and never
reaches the GPU; the servers count these in `stats["rejected_400"]`. The workload's `output_tokens` is taken
as the request's `max_new_tokens` (a trace records what was generated, which is what the client asked for or
less). For vision models the workload's `input_tokens` carries the image's pixel count.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from validation.fields import Section
from simulation.clock import call_later
from simulation.gpu.memory import (DEFAULT_ACTIVATION_GIB, DEFAULT_GPU_MEMORY_UTILIZATION,
                                   DEFAULT_NAIVE_OVERHEAD_GIB, DEFAULT_OVERHEAD_GIB, BLOCK_SIZE, VllmBudget,
                                   blocks_for, kv_bytes_per_token, kv_tokens_held, naive_base_bytes,
                                   prefill_activation_bytes, vision_activation_bytes, vllm_budget)
from simulation.gpu.profile import Profile, parse_profile
from simulation.gpu.roofline import DEFAULT_EFFICIENCY, Efficiency, decode_step_time, prefill_time, vision_batch_time
from simulation.server import ModelServer, OnDone, register_server

OK, BAD_REQUEST, SERVER_ERROR, UNAVAILABLE = 200, 400, 500, 503
OOM_REASON = "CUDA out of memory"
EPS = 1e-9


def new_stats() -> dict[str, int]:
    """Per-server counters (summed over pods by the report): see docs/gpu-model.md."""
    return {"rejected_400": 0, "oom_events": 0, "oom_request_failures": 0, "oom_crashes": 0, "completed": 0}


def _crash_pod(server: Any, reason: str) -> None:
    """The server process dies: the pod fails everything in flight (502) and restarts the container. A pod
    that ignores the crash (already terminating) still loses the process: fail the work here (500)."""
    before = server._fails
    server.pod.crash(reason)
    if server._fails == before:
        server.fail_all(SERVER_ERROR)


# ---------------------------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LlmSpec:
    """What every LLM server reads from `server:` (besides its own keys)."""

    profile: Profile
    eff: Efficiency = DEFAULT_EFFICIENCY
    max_input_tokens: int | None = None  # 400 above (the guides: MAX_INPUT_TOKENS = 4096)
    max_new_tokens: int | None = None  # 400 above (the guides: MAX_NEW_TOKENS = 1024)
    startup_extra_s: float = 0.0


@dataclass(frozen=True)
class VllmSpec(LlmSpec):
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    max_model_len: int = 0  # 0 → the model's max_context
    max_num_seqs: int = 256  # vLLM default
    max_num_batched_tokens: int = 0  # tokens per prefill pass; 0 → max(max_model_len, 2048) (vLLM v0 default)
    block_size: int = BLOCK_SIZE
    activation_gib: float = DEFAULT_ACTIVATION_GIB
    overhead_gib: float = DEFAULT_OVERHEAD_GIB
    budget: VllmBudget | None = None  # derived


@dataclass(frozen=True)
class NaiveSpec(LlmSpec):
    oom: str = "process"  # "process": the CUDA OOM kills the server process (pod crash); "request": that request 500s
    overhead_gib: float = DEFAULT_NAIVE_OVERHEAD_GIB
    eager_attention: bool = True
    activation_bytes_per_token: float | None = None


@dataclass(frozen=True)
class TritonSpec:
    profile: Profile
    eff: Efficiency = DEFAULT_EFFICIENCY
    max_batch_size: int = 4
    preferred_batch_size: tuple[int, ...] = ()
    max_queue_delay_us: int = 0
    max_queue_size: int = 0  # 0 = unbounded; above it Triton answers 503 ("Exceeds maximum queue size")
    max_pixels: int | None = None  # 400 above (the guides' image-size cap)
    oom: str = "request"
    overhead_gib: float = DEFAULT_NAIVE_OVERHEAD_GIB
    startup_extra_s: float = 0.0


def _efficiency(sec: Section) -> Efficiency:
    d = DEFAULT_EFFICIENCY
    return Efficiency(
        memory=sec.float("memory_efficiency", d.memory, min=0.0, min_exclusive=True, max=1.0),
        compute=sec.float("compute_efficiency", d.compute, min=0.0, min_exclusive=True, max=1.0),
        step_overhead_s=sec.float("step_overhead_s", d.step_overhead_s, min=0.0),
        prefill_overhead_s=sec.float("prefill_overhead_s", d.prefill_overhead_s, min=0.0),
    )


def _llm_common(sec: Section, model_name: str | None) -> dict[str, Any] | None:
    profile = parse_profile(sec, kinds=("llm",), default_model=model_name)
    common = dict(eff=_efficiency(sec),
                  max_input_tokens=sec.int("max_input_tokens", None, min=1),
                  max_new_tokens=sec.int("max_new_tokens", None, min=1),
                  startup_extra_s=sec.float("startup_extra_s", 0.0, min=0.0))
    return None if profile is None else dict(profile=profile, **common)


def _model_name(model: Any) -> str | None:
    """The core may pass the scenario's model (a name, a mapping with `name`, or None)."""
    if isinstance(model, str):
        return model
    if isinstance(model, dict):
        return model.get("name")
    return getattr(model, "name", None)


# ---------------------------------------------------------------------------------------------------------
# LLM engine: shared continuous-batching timeline
# ---------------------------------------------------------------------------------------------------------

class _Seq:
    __slots__ = ("req", "on_done", "inp", "out", "gen", "t_submit", "ttfb", "blocks")

    def __init__(self, req: Any, on_done: OnDone, now: float) -> None:
        self.req = req
        self.on_done = on_done
        self.inp = max(1, int(req.input_tokens))
        self.out = max(1, int(req.output_tokens))
        self.gen = 0.0  # tokens generated so far (fractional inside a decode segment)
        self.t_submit = now
        self.ttfb = None
        self.blocks = 0

    @property
    def context(self) -> float:
        return self.inp + self.gen


class _LlmServer(ModelServer):
    """Waiting → prefill pass → decoding batch → done. Subclasses decide admission, pass times and OOM."""

    def __init__(self, env: Any, pod: Any, spec: LlmSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.model = spec.profile.model
        self.gpu = spec.profile.gpu
        self.tp = spec.profile.tp
        self.waiting: deque[_Seq] = deque()
        self.prefilling: list[_Seq] = []
        self.running: list[_Seq] = []
        self._seqs: dict[Any, _Seq] = {}
        self._call = None
        self._busy = ""  # "", "prefill" or "decode"
        self._seg_t0 = 0.0
        self._seg_step = 0.0
        self._seg_oom = False
        self._scheduling = False
        self._crashed = False  # set by a process-killing OOM inside the current schedule: stop there
        self._fails = 0  # fail_all calls (to see whether pod.crash() reached us)
        self.stats = new_stats()
        self.batch_sizes: list[tuple[float, int]] = []  # (time, decoding batch size) at each change

    # -- contract ----------------------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        return len(self._seqs)

    def check(self, request: Any) -> int | None:
        spec = self.spec
        if ((spec.max_input_tokens is not None and request.input_tokens > spec.max_input_tokens)
                or (spec.max_new_tokens is not None and request.output_tokens > spec.max_new_tokens)):
            self.stats["rejected_400"] += 1
            return BAD_REQUEST
        return None

    def submit(self, request: Any, on_done: OnDone) -> None:
        seq = _Seq(request, on_done, self.env.now)
        self._seqs[request] = seq
        self.waiting.append(seq)
        self._kick()

    def cancel(self, request: Any) -> None:
        seq = self._seqs.pop(request, None)
        if seq is None:
            return
        if seq in self.waiting:
            self.waiting.remove(seq)
        elif seq in self.prefilling:
            self.prefilling.remove(seq)  # its pass still runs; nobody is told
            self._release(seq)
        elif seq in self.running:
            self._pause()
            self.running.remove(seq)
            self._release(seq)
            self._kick()

    def fail_all(self, status: int) -> None:
        self._fails += 1
        if self._call is not None:
            self._call.cancel()
            self._call = None
        seqs = list(self._seqs.values())
        self._seqs.clear()
        self.waiting.clear()
        self.prefilling = []
        self.running = []
        self._busy = ""
        self._reset_memory()
        for seq in seqs:
            seq.on_done(seq.req, status, None)

    def startup_extra_s(self) -> float:
        return self.spec.startup_extra_s

    # -- timeline ----------------------------------------------------------------------------------------
    def _kick(self) -> None:
        if self._scheduling or self._busy == "prefill":
            return  # the running schedule / the pass's end picks the change up
        self._pause()
        self._schedule()

    def _pause(self) -> None:
        """Stop the current decode segment now, crediting every sequence with the tokens made so far."""
        if self._busy != "decode":
            return
        self._advance()
        if self._call is not None:
            self._call.cancel()
            self._call = None
        self._busy = ""

    def _advance(self) -> None:
        now = self.env.now
        if self._seg_step > 0:
            tokens = (now - self._seg_t0) / self._seg_step
            for seq in self.running:
                seq.gen = min(seq.out, seq.gen + tokens)
        self._seg_t0 = now

    def _schedule(self) -> None:
        self._crashed = False
        self._scheduling = True
        try:
            self._schedule_inner()
        finally:
            self._scheduling = False

    def _schedule_inner(self) -> None:
        while True:
            done = [s for s in self.running if s.gen >= s.out - EPS]
            if not done:
                break
            self.running = [s for s in self.running if s.gen < s.out - EPS]
            for seq in done:
                self._release(seq)
                self._seqs.pop(seq.req, None)
                self.stats["completed"] += 1
                seq.on_done(seq.req, OK, seq.ttfb)  # may submit the next request (queued, not re-entered)
        batch = self._admit()
        if batch:
            batch = self._prefill_memory_check(batch)
            if self._crashed:
                return
        if batch:
            self.prefilling = batch
            self._busy = "prefill"
            self._call = call_later(self.env, self._prefill_time(batch), self._end_prefill)
            return
        if not self.running:
            self._busy = ""
            self._seg_step = 0.0
            return
        step = self._step_time()
        steps = min(s.out - s.gen for s in self.running)
        oom_steps = self._decode_oom_steps()
        self._seg_oom = oom_steps is not None and oom_steps < steps
        if self._seg_oom:
            steps = oom_steps
        self._busy = "decode"
        self._seg_t0 = self.env.now
        self._seg_step = step
        self.batch_sizes.append((self.env.now, len(self.running)))
        self._call = call_later(self.env, max(0.0, steps) * step, self._end_decode)

    def _end_prefill(self) -> None:
        self._call = None
        self._busy = ""
        now = self.env.now
        for seq in self.prefilling:
            if seq.req in self._seqs:  # not cancelled meanwhile
                seq.gen = 1.0  # the prefill pass samples the first output token
                seq.ttfb = now - seq.t_submit
                self.running.append(seq)
        self.prefilling = []
        self._seg_t0 = now
        self._schedule()

    def _end_decode(self) -> None:
        self._call = None
        self._advance()
        self._busy = ""
        if self._seg_oom:
            self._seg_oom = False
            self._crashed = False
            self._decode_oom()
            if self._crashed:
                return
        self._schedule()

    # -- OOM handling (naive server) --------------------------------------------------------------------
    def _oom_fail(self, victims: list[_Seq]) -> None:
        """A CUDA OOM: with oom=process the pod crashes (fail_all via the pod); else the victims get 500."""
        self.stats["oom_events"] += 1
        if getattr(self.spec, "oom", "process") == "process":
            self.stats["oom_crashes"] += 1
            self._crashed = True
            _crash_pod(self, OOM_REASON)
            return
        for seq in victims:
            self._seqs.pop(seq.req, None)
            if seq in self.running:
                self.running.remove(seq)
            self._release(seq)
            self.stats["oom_request_failures"] += 1
            seq.on_done(seq.req, SERVER_ERROR, None)

    # -- hooks -------------------------------------------------------------------------------------------
    def _admit(self) -> list[_Seq]:
        raise NotImplementedError

    def _prefill_time(self, batch: list[_Seq]) -> float:
        raise NotImplementedError

    def _step_time(self) -> float:
        raise NotImplementedError

    def _prefill_memory_check(self, batch: list[_Seq]) -> list[_Seq]:
        return batch

    def _decode_oom_steps(self) -> float | None:
        return None

    def _decode_oom(self) -> None:
        pass

    def _release(self, seq: _Seq) -> None:
        pass

    def _reset_memory(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------------------
# vllm
# ---------------------------------------------------------------------------------------------------------

@register_server
class VllmServer(_LlmServer):
    """vLLM-style engine: pre-allocated KV blocks, continuous batching, never a runtime OOM.

    Admission (FCFS, vLLM v0 `Scheduler._schedule_prefills`): the head of the queue joins when the batch has
    fewer than `max_num_seqs` sequences, the pass stays within `max_num_batched_tokens`, and enough free KV
    blocks exist. Simplification: blocks for the whole sequence (prompt + max_new_tokens) are reserved at
    admission, so the pool never runs dry mid-decode and no preemption is modelled; real vLLM reserves the
    prompt's blocks and preempts (recomputes) the newest sequence when a decode step finds no free block —
    ours admits slightly fewer sequences at once and never recomputes. Prompts + max_new_tokens over
    `max_model_len` are answered 400 as vLLM's OpenAI server does. Prefill passes run alone (decode of the
    batch waits: vLLM v0 without chunked prefill).
    """

    kind = "vllm"

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> VllmSpec | None:
        common = _llm_common(section, _model_name(model))
        util = section.float("gpu_memory_utilization", DEFAULT_GPU_MEMORY_UTILIZATION, min=0.05, max=1.0)
        max_len = section.int("max_model_len", 0, min=1)
        seqs = section.int("max_num_seqs", 256, min=1)
        batched = section.int("max_num_batched_tokens", 0, min=1)
        block = section.int("block_size", BLOCK_SIZE, min=1, max=256)
        act = section.float("activation_gib", DEFAULT_ACTIVATION_GIB, min=0.0)
        over = section.float("overhead_gib", DEFAULT_OVERHEAD_GIB, min=0.0)
        if common is None:
            return None
        prof = common["profile"]
        if max_len and max_len > prof.model.max_context:
            section.problem("max_model_len", max_len, f"expected at most {prof.model.max_context} "
                            f"({prof.model.name}'s context length)")
        max_len = max_len or prof.model.max_context
        budget = vllm_budget(prof.gpu, prof.model, gpu_memory_utilization=util, max_model_len=max_len,
                             activation_gib=act, overhead_gib=over, block_size=block, tp=prof.tp)
        return VllmSpec(**common, gpu_memory_utilization=util, max_model_len=max_len, max_num_seqs=seqs,
                        max_num_batched_tokens=batched or max(max_len, 2048), block_size=block,
                        activation_gib=act, overhead_gib=over, budget=budget)

    def __init__(self, env: Any, pod: Any, spec: VllmSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.budget = spec.budget
        self.free_blocks = spec.budget.num_blocks

    def startup_error(self) -> str | None:
        return None if self.budget.can_start else f"vLLM refused to start: {self.budget.reason}"

    def check(self, request: Any) -> int | None:
        status = super().check(request)
        if status is None and request.input_tokens + request.output_tokens > self.spec.max_model_len:
            self.stats["rejected_400"] += 1
            status = BAD_REQUEST
        return status

    def _admit(self) -> list[_Seq]:
        batch: list[_Seq] = []
        tokens = 0
        limit = self.spec.max_num_batched_tokens
        while self.waiting and len(self.running) + len(batch) < self.spec.max_num_seqs:
            seq = self.waiting[0]
            need = blocks_for(self.model, seq.inp + seq.out, self.spec.block_size)
            if need > self.free_blocks or (batch and tokens + seq.inp > limit):
                break
            self.waiting.popleft()
            seq.blocks = need
            self.free_blocks -= need
            tokens += seq.inp
            batch.append(seq)
        return batch

    def _prefill_time(self, batch: list[_Seq]) -> float:
        return prefill_time(self.model, self.gpu, [s.inp for s in batch], eff=self.spec.eff, tp=self.tp)

    def _step_time(self) -> float:
        ctx = sum(kv_tokens_held(self.model, int(s.context)) for s in self.running)
        return decode_step_time(self.model, self.gpu, len(self.running), ctx, eff=self.spec.eff, tp=self.tp)

    def _release(self, seq: _Seq) -> None:
        self.free_blocks += seq.blocks
        seq.blocks = 0

    def _reset_memory(self) -> None:
        self.free_blocks = self.budget.num_blocks

    @property
    def used_blocks(self) -> int:
        return self.budget.num_blocks - self.free_blocks


# ---------------------------------------------------------------------------------------------------------
# naive
# ---------------------------------------------------------------------------------------------------------

@register_server
class NaiveServer(_LlmServer):
    """A plain PyTorch / Transformers server: every admitted request runs its own `generate()`.

    Memory = weights + overhead + KV of every in-flight sequence (prompt + tokens so far) + the transient
    activations of the prompt being prefilled (`memory.naive_memory_bytes`). Nothing limits it but the
    queue-proxy's containerConcurrency. When a prefill or a decode step would take it above the GPU's
    memory, `torch.cuda.OutOfMemoryError` is raised: with `oom: process` (an unhandled error kills the
    worker, as a TorchServe/KServe Python worker dying) the pod crashes — everything in flight fails and
    the container restarts with CrashLoopBackOff; with `oom: request` only the allocating request fails (500).

    Timing: requests are not batched — concurrent `generate()` calls time-share the GPU, each decode step
    reading all weights for one sequence, so a sequence gets a token every Σ single-sequence step times
    (concurrency adds latency and memory, not throughput: the guides' "동시성 4 ≠ 처리량 4배").
    Prompts are prefilled one at a time. Decode memory grows by n × KV bytes per step; the OOM step is
    computed in closed form, not by stepping.
    """

    kind = "naive"

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> NaiveSpec | None:
        common = _llm_common(section, _model_name(model))
        oom = section.choice("oom", ["process", "request"], "process")
        over = section.float("overhead_gib", DEFAULT_NAIVE_OVERHEAD_GIB, min=0.0)
        eager = section.bool("eager_attention", True)
        act = section.float("activation_bytes_per_token", None, min=0.0)
        if common is None:
            return None
        return NaiveSpec(**common, oom=oom, overhead_gib=over, eager_attention=eager,
                         activation_bytes_per_token=act)

    def __init__(self, env: Any, pod: Any, spec: NaiveSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.capacity = self.gpu.memory_bytes
        self.base = naive_base_bytes(self.model, spec.overhead_gib, self.tp)
        self.kv = kv_bytes_per_token(self.model, self.tp)
        self.peak_bytes = self.base

    def startup_error(self) -> str | None:
        if self.base > self.capacity:
            return (f"{OOM_REASON} while loading {self.model.name}: {self.base / 2**30:.1f} GiB > "
                    f"{self.gpu.memory_gib} GiB on {self.gpu.name}")
        return None

    def memory_in_use(self, extra_prefill: list[_Seq] = ()) -> float:
        contexts = sum(s.context for s in self.running) + sum(s.inp for s in extra_prefill)
        act = sum(prefill_activation_bytes(self.model, s.inp, eager_attention=self.spec.eager_attention,
                                           bytes_per_token=self.spec.activation_bytes_per_token, tp=self.tp)
                  for s in extra_prefill)
        return self.base + self.kv * contexts + act

    def _admit(self) -> list[_Seq]:
        return [self.waiting.popleft()] if self.waiting else []

    def _prefill_memory_check(self, batch: list[_Seq]) -> list[_Seq]:
        need = self.memory_in_use(batch)
        if need <= self.capacity:
            self.peak_bytes = max(self.peak_bytes, need)
            return batch
        self._oom_fail(batch)
        return []

    def _prefill_time(self, batch: list[_Seq]) -> float:
        return prefill_time(self.model, self.gpu, batch[0].inp, eff=self.spec.eff, tp=self.tp)

    def _step_time(self) -> float:
        # Time-sliced, unbatched: one single-sequence step per in-flight sequence per round.
        return sum(decode_step_time(self.model, self.gpu, 1, int(s.context), eff=self.spec.eff, tp=self.tp)
                   for s in self.running)

    def _decode_oom_steps(self) -> float | None:
        growth = self.kv * len(self.running)  # every sequence appends one token's KV per step
        if growth <= 0:
            return None
        room = self.capacity - self.memory_in_use()
        self.peak_bytes = max(self.peak_bytes, self.memory_in_use())
        return math.floor(room / growth) + 1 if room >= 0 else 0.0

    def _decode_oom(self) -> None:
        newest = max(self.running, key=lambda s: s.t_submit)
        self._oom_fail([newest])


# ---------------------------------------------------------------------------------------------------------
# triton (vision, dynamic batching)
# ---------------------------------------------------------------------------------------------------------

class _Item:
    __slots__ = ("req", "on_done", "pixels", "t_submit")

    def __init__(self, req: Any, on_done: OnDone, now: float) -> None:
        self.req = req
        self.on_done = on_done
        self.pixels = max(1, int(req.input_tokens))
        self.t_submit = now


@register_server
class TritonServer(ModelServer):
    """Triton Inference Server's dynamic batcher in front of one model instance (vision models).

    `model_config.proto` (triton-inference-server/common `protobuf/model_config.proto`: `ModelDynamicBatching`):
    `max_batch_size`, `preferred_batch_size`, `max_queue_delay_microseconds`, `default_queue_policy.
    max_queue_size`. Behaviour modelled (Triton docs, "Dynamic Batcher"): when the instance is free, a batch
    of the largest preferred size the queue can fill goes at once (without preferred sizes: `max_batch_size`);
    otherwise the batcher waits until the oldest request has waited `max_queue_delay_microseconds`, then sends
    what it has (up to `max_batch_size`). A full queue answers 503 (`RequestQueue::Enqueue`, "Exceeds maximum
    queue size"). Batch memory = weights + overhead + Σ per-image activation (scaled by pixels); above the
    GPU's memory the batch fails with 500 (`oom: request`, Triton's PyTorch backend returns the error) or the
    pod crashes (`oom: process`). Simplifications: one model instance (`instance_group count: 1`), batch time
    from the roofline (`vision_batch_time`), no padding to a preferred size.
    """

    kind = "triton"

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> TritonSpec | None:
        profile = parse_profile(section, kinds=("vision",), default_model=_model_name(model))
        eff = _efficiency(section)
        mbs = section.int("max_batch_size", 4, min=1, max=4096)
        pref_raw = section.raw("preferred_batch_size", [])
        pref: tuple[int, ...] = ()
        if not isinstance(pref_raw, list) or not all(isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= mbs
                                                     for p in pref_raw):
            section.problem("preferred_batch_size", pref_raw, f"expected a list of integers between 1 and {mbs}")
        else:
            pref = tuple(sorted(set(pref_raw)))
        delay = section.int("max_queue_delay_microseconds", 0, min=0)
        qsize = section.int("max_queue_size", 0, min=0)
        max_pixels = section.int("max_pixels", None, min=1)
        oom = section.choice("oom", ["process", "request"], "request")
        over = section.float("overhead_gib", DEFAULT_NAIVE_OVERHEAD_GIB, min=0.0)
        extra = section.float("startup_extra_s", 0.0, min=0.0)
        if profile is None:
            return None
        return TritonSpec(profile, eff, mbs, pref, delay, qsize, max_pixels, oom, over, extra)

    def __init__(self, env: Any, pod: Any, spec: TritonSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.model = spec.profile.model
        self.gpu = spec.profile.gpu
        self.queue: deque[_Item] = deque()
        self.batch: list[_Item] = []
        self._items: dict[Any, _Item] = {}
        self._call = None  # the batch in progress, or the queue-delay timer
        self._timer = False
        self._fails = 0
        self.capacity = self.gpu.memory_bytes
        self.base = naive_base_bytes(self.model, spec.overhead_gib)
        self.stats = new_stats()
        self.batch_sizes: list[int] = []

    @property
    def in_flight(self) -> int:
        return len(self._items)

    def startup_error(self) -> str | None:
        return f"{OOM_REASON} while loading {self.model.name}" if self.base > self.capacity else None

    def startup_extra_s(self) -> float:
        return self.spec.startup_extra_s

    def check(self, request: Any) -> int | None:
        if self.spec.max_pixels is not None and request.input_tokens > self.spec.max_pixels:
            self.stats["rejected_400"] += 1
            return BAD_REQUEST
        if self.spec.max_queue_size and len(self.queue) >= self.spec.max_queue_size:
            return UNAVAILABLE
        return None

    def submit(self, request: Any, on_done: OnDone) -> None:
        item = _Item(request, on_done, self.env.now)
        self._items[request] = item
        self.queue.append(item)
        self._maybe_dispatch()

    def cancel(self, request: Any) -> None:
        item = self._items.pop(request, None)
        if item is not None and item in self.queue:
            self.queue.remove(item)

    def fail_all(self, status: int) -> None:
        self._fails += 1
        if self._call is not None:
            self._call.cancel()
            self._call = None
        items = list(self._items.values())
        self._items.clear()
        self.queue.clear()
        self.batch = []
        self._timer = False
        for item in items:
            item.on_done(item.req, status, None)

    def _batch_size_now(self, timed_out: bool) -> int:
        n, spec = len(self.queue), self.spec
        if n == 0:
            return 0
        if n >= spec.max_batch_size:
            return spec.max_batch_size
        fitting = [p for p in spec.preferred_batch_size if p <= n]
        if fitting:
            return fitting[-1]
        waited = self.env.now - self.queue[0].t_submit
        if timed_out or waited >= spec.max_queue_delay_us * 1e-6 - EPS:
            return n
        return 0

    def _maybe_dispatch(self, timed_out: bool = False) -> None:
        if self.batch:
            return  # the instance is busy; its end dispatches again
        size = self._batch_size_now(timed_out)
        if size == 0:
            if self.queue and not self._timer:
                wait = self.queue[0].t_submit + self.spec.max_queue_delay_us * 1e-6 - self.env.now
                self._timer = True
                self._call = call_later(self.env, max(0.0, wait), self._on_delay)
            return
        if self._timer and self._call is not None:
            self._call.cancel()
        self._timer = False
        batch = [self.queue.popleft() for _ in range(size)]
        need = self.base + sum(vision_activation_bytes(self.model, it.pixels) for it in batch)
        if need > self.capacity:
            self.stats["oom_events"] += 1
            if self.spec.oom == "process":
                self.stats["oom_crashes"] += 1
                self.queue.extendleft(reversed(batch))
                _crash_pod(self, OOM_REASON)
                return
            for it in batch:
                self._items.pop(it.req, None)
                self.stats["oom_request_failures"] += 1
                it.on_done(it.req, SERVER_ERROR, None)
            self._maybe_dispatch()
            return
        self.batch = batch
        self.batch_sizes.append(size)
        t = vision_batch_time(self.model, self.gpu, [it.pixels for it in batch], eff=self.spec.eff)
        self._call = call_later(self.env, t, self._end_batch)

    def _on_delay(self) -> None:
        self._timer = False
        self._call = None
        self._maybe_dispatch(timed_out=True)

    def _end_batch(self) -> None:
        batch, self.batch = self.batch, []
        self._call = None
        now = self.env.now
        for it in batch:
            if self._items.pop(it.req, None) is not None:
                self.stats["completed"] += 1
                it.on_done(it.req, OK, now - it.t_submit)
        self._maybe_dispatch()


__all__ = ["VllmServer", "NaiveServer", "TritonServer", "VllmSpec", "NaiveSpec", "TritonSpec", "LlmSpec",
           "new_stats", "OOM_REASON"]

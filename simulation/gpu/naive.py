"""`naive`: a plain PyTorch / Transformers server whose memory grows with what is in flight (CUDA OOM)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from validation.fields import Section
from simulation.gpu.llm_engine import LlmServer, LlmSpec, Seq, llm_common
from simulation.gpu.memory import (DEFAULT_NAIVE_OVERHEAD_GIB, kv_bytes_per_token, naive_base_bytes,
                                   prefill_activation_bytes)
from simulation.gpu.roofline import decode_step_time, prefill_time
from simulation.gpu.server_common import BAD_REQUEST, OOM_REASON, model_name
from simulation.server import register_server

SERIAL, CONCURRENT = "serial", "concurrent"
GENERATE_MODES = [SERIAL, CONCURRENT]


def _discard(*_: Any) -> None:
    """The answer of a request whose client has gone: nobody reads it."""


@dataclass(frozen=True)
class NaiveSpec(LlmSpec):
    oom: str = "request"  # "request": that request 500s and the server goes on (KServe's default); "process": pod crash
    generate: str = SERIAL  # serial: KServe huggingfaceserver's one generate thread; concurrent: one per request
    overhead_gib: float = DEFAULT_NAIVE_OVERHEAD_GIB
    eager_attention: bool = False  # True: attn_implementation="eager" (an L² score matrix); default SDPA
    all_logits: bool = False  # True: logits for every prompt position (forward() without logits_to_keep)
    activation_bytes_per_token: float | None = None
    max_model_len: int | None = None  # `--max_length`: prompt + max_tokens above it is answered 400


@register_server
class NaiveServer(LlmServer):
    """A plain PyTorch / Transformers server: `model.generate()` per request, no batching, no reserved KV cache.

    `generate: serial` (default) is KServe's huggingfaceserver with `--backend=huggingface` (kserve v0.15.0
    `python/huggingfaceserver/huggingfaceserver/generative_model.py`): requests go into `_request_queue` and one
    background thread (`load()` starts `Thread(target=self._process_requests)`) takes them off one at a time and
    runs `_handle_request` — `generate()` to the end, a streamed one too — before the next. So one sequence is
    on the GPU at a time, the rest wait FIFO; a request whose client has gone stays queued and is still
    generated (nothing checks for it), holding the thread. `generate: concurrent` is a custom server that runs
    one `generate()` per request at once (e.g. a FastAPI `def` endpoint on its thread pool): the guides' OOM
    spiral — concurrent `generate()` calls time-share the GPU, each decode step reading all weights for one
    sequence, so a sequence gets a token every Σ single-sequence step times (concurrency adds latency and
    memory, not throughput: the guides' "동시성 4 ≠ 처리량 4배"); prompts are prefilled one at a time.

    Memory = weights + overhead + KV of every sequence on the GPU (prompt + tokens so far) + the transient
    activations of the prompt being prefilled (`memory.prefill_activation_bytes`), against the CUDA-reported
    total (`Gpu.cuda_total_bytes`). When a prefill or a decode step would take it above,
    `torch.cuda.OutOfMemoryError` is raised. `oom: request` (default): only the allocating request fails —
    KServe's Python model server turns an exception inside a request into a 500 and keeps serving
    (`kserve/errors.py: generic_exception_handler`; `model_server.py` registers it for every Exception).
    `oom: process`: the error kills the worker (a server that exits on it, or a CUDA context left unusable
    — the guides' spiral) and the pod crashes — everything in flight fails and the container restarts with
    CrashLoopBackOff. Decode memory grows by n × KV bytes per step; the OOM step is computed in closed form.

    Several GPUs (`tensor_parallel_size` = the pod's GPUs): huggingfaceserver loads with `device_map="auto"`
    (`generative_model.py`, for every model with `_no_split_modules`), Accelerate's sequential split: each GPU
    holds a run of layers (memory: 1/n of the weights and KV per GPU) and a pass runs them one GPU after
    another, so it is as fast as one GPU reading all the weights — no tensor parallelism, no all-reduces. The
    hidden-state copies at the n − 1 GPU boundaries (tokens × hidden × 2 bytes each) are left out.
    """

    kind = "naive"

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> NaiveSpec | None:
        common = llm_common(section, model_name(model))
        oom = section.choice("oom", ["process", "request"], "request")
        generate = section.choice("generate", GENERATE_MODES, SERIAL)
        over = section.float("overhead_gib", DEFAULT_NAIVE_OVERHEAD_GIB, min=0.0)
        eager = section.bool("eager_attention", False)
        all_logits = section.bool("all_logits", False)
        act = section.float("activation_bytes_per_token", None, min=0.0)
        max_len = section.int("max_model_len", None, min=1)
        if common is None:
            return None
        return NaiveSpec(**common, oom=oom, generate=generate, overhead_gib=over, eager_attention=eager,
                         all_logits=all_logits, activation_bytes_per_token=act, max_model_len=max_len)

    def __init__(self, env: Any, pod: Any, spec: NaiveSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.capacity = self.gpu.cuda_total_bytes  # what torch's allocator can have, as vLLM sizes from
        self.base = naive_base_bytes(self.model, spec.overhead_gib, self.tp)
        self.kv = kv_bytes_per_token(self.model, self.tp)
        self.peak_bytes = self.base
        self.serial = spec.generate == SERIAL

    def check(self, request: Any) -> int | None:
        """KServe's huggingfaceserver (`generative_model.py`, completion): 400 when the prompt plus max_tokens
        exceed `--max_length`, the model's whole context; then the generic caps."""
        limit = self.spec.max_model_len
        if limit is not None and request.input_tokens + request.output_tokens > limit:
            self.stats["rejected_400"] += 1
            return BAD_REQUEST
        return super().check(request)

    def cancel(self, request: Any) -> None:
        """Serial: the request stays in `_request_queue` (or its `generate()` runs on) and is generated all the
        same — huggingfaceserver never looks at a cancelled request — so it keeps its place and memory; its
        answer goes nowhere. Concurrent: the server drops it (as the shared timeline does)."""
        if not self.serial:
            super().cancel(request)
            return
        seq = self._seqs.pop(request, None)
        if seq is not None:
            seq.req, seq.on_done = object(), _discard  # a fresh key: the same request may come back (a retry)
            self._seqs[seq.req] = seq

    def startup_error(self) -> str | None:
        if self.base > self.capacity:
            return (f"{OOM_REASON} while loading {self.model.name}: {self.base / 2**30:.1f} GiB > "
                    f"{self.capacity / 2**30:.2f} GiB on {self.gpu.name}")
        return None

    def memory_in_use(self, extra_prefill: list[Seq] = ()) -> float:
        contexts = sum(s.context for s in self.running) + sum(s.inp for s in extra_prefill)
        spec = self.spec
        act = sum(prefill_activation_bytes(self.model, s.inp, eager_attention=spec.eager_attention,
                                           all_logits=spec.all_logits,
                                           bytes_per_token=spec.activation_bytes_per_token, tp=self.tp)
                  for s in extra_prefill)
        return self.base + self.kv * contexts + act

    def _admit(self) -> list[Seq]:
        if self.serial and self.running:
            return []  # the one generate thread is busy until this sequence ends
        return [self.waiting.popleft()] if self.waiting else []

    def _prefill_memory_check(self, batch: list[Seq]) -> list[Seq]:
        need = self.memory_in_use(batch)
        if need <= self.capacity:
            self.peak_bytes = max(self.peak_bytes, need)
            return batch
        self._oom_fail(batch)
        return []

    def _prefill_time(self, batch: list[Seq]) -> float:
        # one GPU's roofline whatever the GPU count: device_map="auto" runs the layers one GPU after another
        return prefill_time(self.model, self.gpu, batch[0].inp, eff=self.spec.eff)

    def _step_time(self) -> float:
        # Unbatched: one single-sequence step per sequence on the GPU per round (time-sliced when concurrent).
        return sum(decode_step_time(self.model, self.gpu, 1, int(s.context), eff=self.spec.eff)
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

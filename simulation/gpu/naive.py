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


@dataclass(frozen=True)
class NaiveSpec(LlmSpec):
    oom: str = "request"  # "request": that request 500s and the server goes on (KServe's default); "process": pod crash
    overhead_gib: float = DEFAULT_NAIVE_OVERHEAD_GIB
    eager_attention: bool = True
    activation_bytes_per_token: float | None = None
    max_model_len: int | None = None  # `--max_length`: prompt + max_tokens above it is answered 400


@register_server
class NaiveServer(LlmServer):
    """A plain PyTorch / Transformers server: every admitted request runs its own `generate()`.

    Memory = weights + overhead + KV of every in-flight sequence (prompt + tokens so far) + the transient
    activations of the prompt being prefilled (`memory.naive_memory_bytes`). Nothing limits it but the
    queue-proxy's containerConcurrency. When a prefill or a decode step would take it above the GPU's
    memory, `torch.cuda.OutOfMemoryError` is raised. `oom: request` (default): only the allocating request
    fails — KServe's Python model server turns an exception inside a request into a 500 and keeps serving
    (`kserve/errors.py: generic_exception_handler`; `model_server.py` registers it for every Exception).
    `oom: process`: the error kills the worker (a server that exits on it, or a CUDA context left unusable
    — the guides' spiral) and the pod crashes — everything in flight fails and the container restarts with
    CrashLoopBackOff.

    Timing: requests are not batched — concurrent `generate()` calls time-share the GPU, each decode step
    reading all weights for one sequence, so a sequence gets a token every Σ single-sequence step times
    (concurrency adds latency and memory, not throughput: the guides' "동시성 4 ≠ 처리량 4배").
    Prompts are prefilled one at a time. Decode memory grows by n × KV bytes per step; the OOM step is
    computed in closed form, not by stepping.
    """

    kind = "naive"

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> NaiveSpec | None:
        common = llm_common(section, model_name(model))
        oom = section.choice("oom", ["process", "request"], "request")
        over = section.float("overhead_gib", DEFAULT_NAIVE_OVERHEAD_GIB, min=0.0)
        eager = section.bool("eager_attention", True)
        act = section.float("activation_bytes_per_token", None, min=0.0)
        max_len = section.int("max_model_len", None, min=1)
        if common is None:
            return None
        return NaiveSpec(**common, oom=oom, overhead_gib=over, eager_attention=eager,
                         activation_bytes_per_token=act, max_model_len=max_len)

    def __init__(self, env: Any, pod: Any, spec: NaiveSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.capacity = self.gpu.memory_bytes
        self.base = naive_base_bytes(self.model, spec.overhead_gib, self.tp)
        self.kv = kv_bytes_per_token(self.model, self.tp)
        self.peak_bytes = self.base

    def check(self, request: Any) -> int | None:
        """KServe's huggingfaceserver (`generative_model.py`, completion): 400 when the prompt plus max_tokens
        exceed `--max_length`, the model's whole context; then the generic caps."""
        limit = self.spec.max_model_len
        if limit is not None and request.input_tokens + request.output_tokens > limit:
            self.stats["rejected_400"] += 1
            return BAD_REQUEST
        return super().check(request)

    def startup_error(self) -> str | None:
        if self.base > self.capacity:
            return (f"{OOM_REASON} while loading {self.model.name}: {self.base / 2**30:.1f} GiB > "
                    f"{self.gpu.memory_gib} GiB on {self.gpu.name}")
        return None

    def memory_in_use(self, extra_prefill: list[Seq] = ()) -> float:
        contexts = sum(s.context for s in self.running) + sum(s.inp for s in extra_prefill)
        act = sum(prefill_activation_bytes(self.model, s.inp, eager_attention=self.spec.eager_attention,
                                           bytes_per_token=self.spec.activation_bytes_per_token, tp=self.tp)
                  for s in extra_prefill)
        return self.base + self.kv * contexts + act

    def _admit(self) -> list[Seq]:
        return [self.waiting.popleft()] if self.waiting else []

    def _prefill_memory_check(self, batch: list[Seq]) -> list[Seq]:
        need = self.memory_in_use(batch)
        if need <= self.capacity:
            self.peak_bytes = max(self.peak_bytes, need)
            return batch
        self._oom_fail(batch)
        return []

    def _prefill_time(self, batch: list[Seq]) -> float:
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

"""`vllm` with `scheduler: v0`: the vLLM V0 scheduler without chunked prefill (whole-request KV reservation
at admission, prefill passes alone, no preemption). For users on vLLM < 0.8 or with `VLLM_USE_V1=0`."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from validation.fields import Section
from simulation.gpu.llm_engine import LlmServer, LlmSpec, Seq, llm_common
from simulation.gpu.memory import (BLOCK_SIZE, DEFAULT_ACTIVATION_GIB, DEFAULT_GPU_MEMORY_UTILIZATION,
                                   DEFAULT_OVERHEAD_GIB, VllmBudget, blocks_for, kv_tokens_held, vllm_budget)
from simulation.gpu.roofline import decode_step_time, prefill_time
from simulation.gpu.server_common import BAD_REQUEST, model_name
from simulation.server import register_server


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


@register_server
class VllmServer(LlmServer):
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
        common = llm_common(section, model_name(model))
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

    def _admit(self) -> list[Seq]:
        batch: list[Seq] = []
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

    def _prefill_time(self, batch: list[Seq]) -> float:
        return prefill_time(self.model, self.gpu, [s.inp for s in batch], eff=self.spec.eff, tp=self.tp)

    def _step_time(self) -> float:
        ctx = sum(kv_tokens_held(self.model, int(s.context)) for s in self.running)
        return decode_step_time(self.model, self.gpu, len(self.running), ctx, eff=self.spec.eff, tp=self.tp)

    def _release(self, seq: Seq) -> None:
        self.free_blocks += seq.blocks
        seq.blocks = 0

    def _reset_memory(self) -> None:
        self.free_blocks = self.budget.num_blocks

    @property
    def used_blocks(self) -> int:
        return self.budget.num_blocks - self.free_blocks

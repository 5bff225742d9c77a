"""`vllm` with `scheduler: v0`: the vLLM V0 scheduler without chunked prefill (whole-request KV reservation
at admission, prefill passes alone, no preemption). For users on vLLM < 0.8 or with `VLLM_USE_V1=0`, up to a
32,768-token `max_model_len`: above it V0 chunks prefills by default and `vllm.VllmServer` runs the V1 engine with
V0's budget instead (`vllm_spec.v0_chunks`)."""

from __future__ import annotations

import random
from typing import Any

from simulation.gpu.llm_engine import LlmServer, Seq
from simulation.gpu.memory import blocks_for, kv_tokens_held
from simulation.gpu.roofline import decode_step_time, prefill_time
from simulation.gpu.vllm_spec import VllmSpec, check_request


class VllmV0Engine(LlmServer):
    """vLLM V0 engine (`scheduler: v0`): pre-allocated KV blocks, continuous batching, never a runtime OOM.

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

    def __init__(self, env: Any, pod: Any, spec: VllmSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.budget = spec.budget
        self.free_blocks = spec.budget.num_blocks

    def startup_error(self) -> str | None:
        return None if self.budget.can_start else f"vLLM refused to start: {self.budget.reason}"

    def check(self, request: Any) -> int | None:
        return check_request(self, request)

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

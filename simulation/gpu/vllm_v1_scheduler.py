"""vLLM V1's scheduler, the half of `vllm_v1.VllmV1Engine` that decides what each engine step runs.

What one engine step does (`vllm/v1/core/sched/scheduler.py: Scheduler.schedule`, read 2026-12):

* One token budget per step, `max_num_batched_tokens`. Running requests go first, in admission order: a
  decoding request takes one token, a request still prefilling takes its next chunk (chunked prefill:
  `min(remaining prompt, budget left)`). Waiting requests are then admitted in FCFS order while budget
  is left, fewer than `max_num_seqs` run and the KV pool has room for their first chunk; none is admitted
  in a step that preempted.
* KV blocks are allocated per step for the tokens scheduled (`KVCacheManager.allocate_slots`). When the
  pool cannot hold the step, the most recently admitted running request is preempted (`self.running.pop()`):
  its blocks are freed, it goes to the front of the waiting queue and is recomputed from scratch — its
  prompt and the tokens it had generated become one longer prefill — then it continues decoding.
  `stats["preemptions"]` counts them.
* The step that completes a prompt samples the first output token (TTFT); each later step one more.
* Prefix caching (on by default in V1) is modelled by `prefix_cache_hit_ratio`: that share of each
  prompt, in whole blocks, is found cached at admission and not computed (at least one token always is).

`V1Scheduler` plans the next segment (k identical steps) from the engine's incremental counters (see
`vllm_v1.py`: the decode-step counter, Σ base over decoders, KV tokens of the prefilling, the finish-step heap)
and starts it; the engine owns the requests' lifecycle and calls `_plan_decode` / `_plan_step` when a segment
ends or something arrives.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

from simulation.clock import NORMAL
from simulation.gpu.server_common import schedule_tick

DECODING, PREFILLING, WAITING = 0, 1, 2


class V1Scheduler:
    """`Scheduler.schedule` for `VllmV1Engine` (a mixin: the state is the engine's, set in its `__init__`)."""

    def _plan_step(self) -> None:
        """The next segment in general: chunks for the prefilling, preemption while the pool cannot hold the
        step, admissions from the waiting queue (`_plan_decode` plans the decode-only case)."""
        n_dec, steps, running, prefilling = self.n_dec, self.steps, self.running, self.prefilling
        budget = self._budget - n_dec
        chunks: list[tuple[Any, int]] = []  # (request, tokens this step)
        new = n_dec
        if prefilling:
            for r in prefilling:
                if budget <= 0:
                    break
                c = r.target - r.computed
                if c > budget:
                    c = budget
                chunks.append((r, c))
                budget -= c
                new += c
        used = self.dec_base + n_dec * steps  # kv_used(), inline (a hot path)
        window = self.window
        if window and used > n_dec * window:
            used = n_dec * window
        used += self.kv_pre
        cap, half = self.cap, self._half
        preempted = False
        while running and used + new + (len(running) - 1) * half > cap:
            victim = self._preempt()
            preempted = True
            for i, (r, c) in enumerate(chunks):
                if r is victim:
                    del chunks[i]
                    new -= c
                    budget += c
                    break
            else:
                new -= 1  # a decoding victim
            used = self.kv_used()
        waiting = self.waiting
        if waiting and (not preempted or not running):  # (a lone request always fits: max_model_len is checked)
            block, hit, seats = self.block, self._hit, self._seats
            while waiting and budget > 0 and len(running) < seats:
                r = waiting[0]
                cached = min(int(r.inp * hit) // block * block, r.target - 1) if hit else 0
                c = r.target - cached
                if c > budget:
                    c = budget
                if used + new + cached + c + len(running) * half > cap:
                    break
                waiting.popleft()
                r.state, r.computed = PREFILLING, cached
                running[r] = None
                prefilling[r] = None
                self.kv_pre += cached
                used += cached
                chunks.append((r, c))
                budget -= c
                new += c
        n_dec = self.n_dec
        if not chunks and not n_dec:
            return  # idle
        # k identical steps: until a decode finishes, a chunk changes or completes, or the pool runs dry
        k = self._heap[0][0] - steps if n_dec else 1 << 60
        for r, c in chunks:
            q = (r.target - r.computed) // c
            if q < k:
                k = q
        q = (cap - (len(running) - 1) * half - used) // new
        if q < k:
            k = q
        if k < 1 or preempted and waiting:
            k = 1  # the queue is closed only in the step that preempted (`if not preempted_reqs:`): replan after it
        self._start(k, chunks, n_dec, budget > 0 and len(running) < self._seats and not waiting)

    def _plan_decode(self) -> bool:
        """`_plan_step` when nothing prefills or waits (most segments): the decoders alone, the same arithmetic
        without the chunk and admission bookkeeping. False, with nothing done, when the pool cannot hold the
        next step (a preemption: the general path plans it)."""
        n = self.n_dec
        if not n:
            return True  # idle
        steps, window = self.steps, self.window
        used = self.dec_base + n * steps
        if window and used > n * window:
            used = n * window
        room = self.cap - (n - 1) * self._half - used - self.kv_pre  # the pool left beside the batch
        if room < n:
            return False
        k = self._heap[0][0] - steps  # until the first decode finishes …
        q = room // n  # … or the pool runs dry
        if q < k:
            k = q
        if k < 1:
            k = 1
        self._start(k, (), n, n < self._open_below)
        return True

    def _start(self, k: int, chunks: Any, n_dec: int, open_: bool) -> None:
        """Begin a segment of k identical steps (the decoders and `chunks`) and schedule its end. The step time
        is `roofline.StepCost.time` at the segment's mean context, with the same arithmetic (the tensor-parallel
        all-reduces of the step's tokens included)."""
        steps, window = self.steps, self.window
        mid = (k - 1) / 2.0
        dec_ctx = self.dec_base + n_dec * (steps + mid)
        if window and dec_ctx > n_dec * window:
            dec_ctx = n_dec * window
        mem_base, mem_kv, cmp_tok, cmp_attn, comm_step, comm_tok = self._coef
        if chunks:
            pre_tokens = pre_kv = attn = 0.0
            for r, c in chunks:
                prior = r.computed + c * mid
                pre_tokens += c
                pre_kv += prior + c
                attn += c * (prior + c / 2.0)
            tokens = n_dec + pre_tokens
            memory_s = mem_base + mem_kv * (dec_ctx + pre_kv)
            compute_s = cmp_tok * tokens + cmp_attn * (dec_ctx + attn)
            over = self._prefill_over
        else:
            tokens = n_dec
            memory_s = mem_base + mem_kv * dec_ctx
            compute_s = cmp_tok * n_dec + cmp_attn * dec_ctx
            over = self._step_over
        dt = (memory_s if memory_s > compute_s else compute_s) + over + (comm_step + comm_tok * tokens)
        self._seg_chunks = chunks
        self._seg_t0 = self.env._now
        self._seg_dt = dt
        self._seg_k = k
        self._seg_dec = n_dec
        self._seg_open = open_
        self._cut = False
        batch = n_dec + len(chunks)
        if batch > self.max_batch:
            self.max_batch = batch
        env, tick, delay = self.env, self._tick, k * dt
        at = env._now + delay
        if at % 1.0:  # schedule_tick, inline: the common case off the whole seconds
            tick.callbacks = self._run
            heappush(env._queue, (at, NORMAL, next(env._eid), tick))  # env.schedule (simpy 4.1.2)
            self._call = tick
        else:
            self._call = schedule_tick(env, tick, delay, self._run)

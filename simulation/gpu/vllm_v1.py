"""`vllm` with `scheduler: v1` (the default): vLLM's V1 scheduler, step by step, simulated in segments.

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

How it is simulated. Steps are not events: a segment is a run of k identical steps (same decode set, same
chunk sizes), ended by the first of: a decode finishing, a prefill chunk size changing or completing, the
pool running dry. k and the segment's time come from counters kept incrementally — a global decode-step
counter (a decoding request's context is `base + steps`), Σ base over decoders, KV tokens in use and a
heap of finish steps — so planning a step costs O(chunks + log n), never a scan of the batch. The step
time is `roofline.StepCost` at the segment's mean context, exact for steps in one roofline regime (the
time is affine in the context). An arrival or a cancellation does not replan at once: when the step in
flight left room for a newcomer (budget, a seat, nobody waiting), the segment is cut at the end of that
step, and every arrival until then is admitted together at the next step, as the engine does.

Simplifications (say so, calibrate): the pool is counted in tokens, each running request's last block
counted half-full (fragmentation error < one block per request); a sliding-window model holds at most its
window per request; cached prefix blocks are charged to each request (no sharing between requests); a
cancelled request's tokens still count in the step in flight.
"""

from __future__ import annotations

import random
from collections import deque
from heapq import heappop, heappush
from math import ceil
from typing import Any

from simulation.clock import NORMAL
from simulation.gpu.roofline import StepCost
from simulation.gpu.server_common import OK, Tick, new_stats, schedule_tick
from simulation.gpu.vllm import VllmSpec, check_request
from simulation.server import ModelServer, OnDone

DECODING, PREFILLING, WAITING = 0, 1, 2


class _Req:
    """One request inside the V1 engine."""

    __slots__ = ("req", "on_done", "inp", "out", "gen", "t_submit", "ttfb", "state", "computed", "target",
                 "base", "epoch")

    def __init__(self, req: Any, on_done: OnDone, now: float) -> None:
        self.req = req
        self.on_done = on_done
        inp, out = int(req.input_tokens), int(req.output_tokens)
        self.inp = inp = inp if inp > 1 else 1
        self.out = out if out > 1 else 1
        self.gen = 0  # output tokens sampled (valid while not decoding; decoding: base + steps − inp)
        self.t_submit = now
        self.ttfb: float | None = None
        self.state = WAITING
        self.computed = 0  # tokens whose KV is in the pool (prefilling)
        self.target = inp  # tokens to compute before the next token is sampled
        self.base = 0  # decoding: context = base + engine steps
        self.epoch = 0  # bumped when it stops decoding (stale heap entries)


class VllmV1Engine(ModelServer):
    """vLLM V1 (see the module docstring)."""

    kind = "vllm"

    def __init__(self, env: Any, pod: Any, spec: VllmSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        prof = spec.profile
        self.model, self.gpu, self.tp = prof.model, prof.gpu, prof.tp
        self.budget = spec.budget
        self.cost = c = StepCost.of(self.model, self.gpu, spec.eff, self.tp)
        self._coef = (c.mem_base_s, c.mem_per_kv_s, c.cmp_per_token_s, c.cmp_per_attn_s)  # StepCost.time, inlined
        self.cap = spec.budget.kv_tokens
        self.block = spec.block_size
        self._half = spec.block_size // 2  # each running request's last block counted half-full
        self._budget = spec.max_num_batched_tokens
        self._seats = spec.max_num_seqs
        self._open_below = min(self._budget, self._seats)  # a decode-only batch below this leaves a newcomer room
        self._step_over, self._prefill_over = c.step_overhead_s, c.prefill_overhead_s
        self._hit = spec.prefix_cache_hit_ratio
        self.window = self.model.sliding_window
        self.waiting: deque[_Req] = deque()
        self.running: dict[_Req, None] = {}  # admission order (preemption pops the newest)
        self.prefilling: dict[_Req, None] = {}  # running requests still computing their prompt, in order
        self._reqs: dict[Any, _Req] = {}
        self._heap: list[tuple[int, int, int, _Req]] = []  # (finish step, tie, epoch, request)
        self._tie = 0
        self.steps = 0  # decode steps taken so far
        self.n_dec = 0
        self.dec_base = 0  # Σ base over decoding requests: their Σ context = dec_base + n_dec × steps
        self.kv_pre = 0  # Σ computed over prefilling requests
        self._tick = Tick()  # the segment's end (reused; a cut abandons it for a fresh one)
        self._run = (self._end,)
        self._call: Tick | None = None  # the tick pending, if any
        self._planning = False
        self._seg_t0 = self._seg_dt = 0.0
        self._seg_k = 0
        self._seg_chunks: list[tuple[_Req, int]] = []
        self._seg_open = False  # the step in flight left room for a newcomer
        self._cut = False
        self._fails = 0
        self.stats = new_stats()
        self.stats["preemptions"] = 0
        self.max_batch = 0
        self.sampled_tokens = 0  # output tokens sampled (each kept across a preemption)
        self.prefill_tokens = 0  # prompt tokens computed, recomputation included
        self._seg_dec = 0

    # -- contract ----------------------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        return len(self._reqs)

    check = check_request  # the OpenAI server's 400s (simulation/gpu/vllm.py), one call per request

    def startup_error(self) -> str | None:
        return None if self.budget.can_start else f"vLLM refused to start: {self.budget.reason}"

    def startup_extra_s(self) -> float:
        return self.spec.startup_extra_s

    def first_byte_at(self, request: Any) -> float | None:
        r = self._reqs.get(request)
        return None if r is None or r.ttfb is None else r.t_submit + r.ttfb

    def submit(self, request: Any, on_done: OnDone) -> None:
        r = _Req(request, on_done, self.env._now)
        self._reqs[request] = r
        self.waiting.append(r)
        if self._seg_open or self._call is None:
            self._wake(True)

    def cancel(self, request: Any) -> None:
        r = self._reqs.pop(request, None)
        if r is None:
            return
        if r.state == WAITING:
            self.waiting.remove(r)
            return
        self._drop(r)
        self._wake(bool(self.waiting))

    def fail_all(self, status: int) -> None:
        self._fails += 1
        if self._call is not None:
            self._cancel()
        reqs = list(self._reqs.values())
        self._reqs.clear()
        self.waiting.clear()
        self.running.clear()
        self.prefilling.clear()
        self._heap.clear()
        self.n_dec = self.dec_base = self.kv_pre = 0
        self._seg_chunks = []
        for r in reqs:
            r.on_done(r.req, status, None)

    # -- bookkeeping ---------------------------------------------------------------------------------------
    def kv_used(self) -> int:
        """KV tokens in the pool now: decoding contexts (a sliding window caps each) + computed prompts."""
        ctx = self.dec_base + self.n_dec * self.steps
        if self.window:
            ctx = min(ctx, self.n_dec * self.window)
        return ctx + self.kv_pre

    def _drop(self, r: _Req) -> None:
        """Take a running request out of the batch (finished, cancelled or preempted)."""
        del self.running[r]
        if r.state == DECODING:
            self.n_dec -= 1
            self.dec_base -= r.base
            r.gen = r.base + self.steps - r.inp
            r.epoch += 1
        else:
            del self.prefilling[r]
            self.kv_pre -= r.computed
        r.state = WAITING

    def _finish(self, r: _Req) -> None:
        if r.state != WAITING:
            self._drop(r)
        self._reqs.pop(r.req, None)
        self.stats["completed"] += 1
        r.on_done(r.req, OK, r.ttfb)  # may submit the next request: it waits for this plan

    def _preempt(self) -> _Req:
        r = next(reversed(self.running))
        self._drop(r)
        r.computed, r.target = 0, r.inp + r.gen  # recompute prompt + generated tokens
        self.waiting.appendleft(r)
        self.stats["preemptions"] += 1
        return r

    # -- timeline ------------------------------------------------------------------------------------------
    def _cancel(self) -> None:
        self._call.callbacks = ()  # still queued in SimPy: it pops as a no-op
        self._call = None
        self._tick = Tick()

    def _wake(self, replan: bool) -> None:
        """Something changed between step boundaries: plan now if idle; else, when the change matters to
        the next step (`replan`), end the segment after the step in flight, coalescing every change until
        then into that one plan."""
        if self._planning:
            return
        if self._call is None:
            self._plan()
            return
        if self._cut or not replan:
            return
        self._cut = True
        t0, dt = self._seg_t0, self._seg_dt
        j = ceil((self.env._now - t0) / dt - 1e-9) if dt > 0 else 1
        if j < 1:
            j = 1
        if j < self._seg_k:
            self._cancel()
            self._seg_k = j
            self._call = schedule_tick(self.env, self._tick, t0 + j * dt - self.env._now, self._run)

    def _end(self, _tick: Any = None) -> None:
        """The segment's k steps are done: credit decode steps and prefill chunks, then plan the next."""
        self._call = None
        k = self._seg_k
        self.steps = steps = self.steps + k
        sampled = self._seg_dec * k
        done = None
        chunks = self._seg_chunks
        if chunks:
            now, prefilling, heap = self.env._now, self.prefilling, self._heap
            kv_pre = prefill = 0
            for r, c in chunks:
                if r.state != PREFILLING:
                    continue  # cancelled meanwhile
                c *= k
                r.computed += c
                kv_pre += c
                prefill += c
                if r.computed >= r.target:
                    del prefilling[r]
                    kv_pre -= r.computed
                    r.gen += 1  # the step that completes the prompt samples a token
                    sampled += 1
                    if r.ttfb is None:
                        r.ttfb = now - r.t_submit
                    if r.gen >= r.out:
                        del self.running[r]
                        r.state = WAITING
                        done = [r] if done is None else done + [r]
                    else:  # it decodes from the next step on
                        r.state = DECODING
                        r.base = base = r.inp + r.gen - steps
                        self.n_dec += 1
                        self.dec_base += base
                        self._tie += 1
                        heappush(heap, (steps + r.out - r.gen, self._tie, r.epoch, r))
            self.kv_pre += kv_pre
            self.prefill_tokens += prefill
            self._seg_chunks = []
        self.sampled_tokens += sampled
        self._plan(done)

    def _plan(self, done: list[_Req] | None = None) -> None:
        """Finish what is done (their `on_done` may submit: those requests wait for this plan), then plan."""
        self._planning = True
        try:
            if done:
                for r in done:
                    self._finish(r)
            heap, steps = self._heap, self.steps
            while heap and heap[0][0] <= steps:  # decodes that reached their last token
                _, _, epoch, r = heappop(heap)
                if epoch == r.epoch and r.state == DECODING:
                    self._finish(r)
            if self.prefilling or self.waiting or not self._plan_decode():
                self._plan_step()
        finally:
            self._planning = False

    def _plan_step(self) -> None:
        """The next segment in general: chunks for the prefilling, preemption while the pool cannot hold the
        step, admissions from the waiting queue (`_plan_decode` plans the decode-only case)."""
        n_dec, steps, running, prefilling = self.n_dec, self.steps, self.running, self.prefilling
        budget = self._budget - n_dec
        chunks: list[tuple[_Req, int]] = []
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
        if k < 1:
            k = 1
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
        is `roofline.StepCost.time` at the segment's mean context, with the same arithmetic."""
        steps, window = self.steps, self.window
        mid = (k - 1) / 2.0
        dec_ctx = self.dec_base + n_dec * (steps + mid)
        if window and dec_ctx > n_dec * window:
            dec_ctx = n_dec * window
        mem_base, mem_kv, cmp_tok, cmp_attn = self._coef
        if chunks:
            pre_tokens = pre_kv = attn = 0.0
            for r, c in chunks:
                prior = r.computed + c * mid
                pre_tokens += c
                pre_kv += prior + c
                attn += c * (prior + c / 2.0)
            memory_s = mem_base + mem_kv * (dec_ctx + pre_kv)
            compute_s = cmp_tok * (n_dec + pre_tokens) + cmp_attn * (dec_ctx + attn)
            over = self._prefill_over
        else:
            memory_s = mem_base + mem_kv * dec_ctx
            compute_s = cmp_tok * n_dec + cmp_attn * dec_ctx
            over = self._step_over
        dt = (memory_s if memory_s > compute_s else compute_s) + over
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

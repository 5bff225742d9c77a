"""`vllm` with `scheduler: v1` (the default): vLLM's V1 engine, step by step, simulated in segments.

What one step schedules (chunked prefill, KV admission, preemption) is `vllm_v1_scheduler.py`; this module keeps
the requests' lifecycle (submit, cancel, finish, fail) and the segments' timeline.

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

from simulation.gpu.roofline import StepCost
from simulation.gpu.server_common import OK, Tick, new_stats, schedule_tick
from simulation.gpu.vllm_spec import VllmSpec, check_request
from simulation.gpu.vllm_v1_scheduler import DECODING, PREFILLING, WAITING, V1Scheduler
from simulation.server import ModelServer, OnDone


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


class VllmV1Engine(V1Scheduler, ModelServer):
    """vLLM V1 (see the module docstring)."""

    kind = "vllm"

    def __init__(self, env: Any, pod: Any, spec: VllmSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        prof = spec.profile
        self.model, self.gpu, self.tp = prof.model, prof.gpu, prof.tp
        self.budget = spec.budget
        self.cost = c = StepCost.of(self.model, self.gpu, spec.eff, self.tp)
        self._coef = (c.mem_base_s, c.mem_per_kv_s, c.cmp_per_token_s, c.cmp_per_attn_s,  # StepCost.time, inlined
                      c.comm_per_step_s, c.comm_per_token_s)
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

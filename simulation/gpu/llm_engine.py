"""The continuous-batching timeline the LLM servers share (`vllm_v0`, `naive`).

Time advances by one scheduled call per pod (`simulation.clock.call_later`), never one event per token:
the server keeps per-pod state (who is waiting, prefilling, decoding and how many tokens each has) and
reschedules a single "next change" call whenever the batch changes — an arrival, a prefill finishing, a
sequence finishing, an OOM. Between changes the decode step time is constant (piecewise-constant, computed
from the roofline at the segment start), so progress is `elapsed / step` tokens for every sequence.

Input caps (issue 4 item 5, the guides' guardrail "비정상 요청 1개가 GPU를 터뜨리는 사고"): a request over
`max_input_tokens` / `max_new_tokens` is answered 400 by `check()` and never reaches the GPU (counted in
`stats["rejected_400"]`). The workload's `output_tokens` is taken as the request's `max_new_tokens` (a trace
records what was generated, which is what the client asked for or less).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from validation.fields import Section
from simulation.clock import call_later
from simulation.gpu.profile import Profile, parse_profile
from simulation.gpu.roofline import DEFAULT_EFFICIENCY, Efficiency
from simulation.gpu.server_common import (BAD_REQUEST, EPS, OK, OOM_REASON, SERVER_ERROR, batch_log,
                                          crash_pod, efficiency, new_stats)
from simulation.server import ModelServer, OnDone


@dataclass(frozen=True)
class LlmSpec:
    """What every LLM server reads from `server:` (besides its own keys)."""

    profile: Profile
    eff: Efficiency = DEFAULT_EFFICIENCY
    max_input_tokens: int | None = None  # 400 above (the guides: MAX_INPUT_TOKENS = 4096)
    max_new_tokens: int | None = None  # 400 above (the guides: MAX_NEW_TOKENS = 1024)
    startup_extra_s: float = 0.0


def llm_common(sec: Section, model_name: str | None) -> dict[str, Any] | None:
    profile = parse_profile(sec, kinds=("llm",), default_model=model_name)
    common = dict(eff=efficiency(sec),
                  max_input_tokens=sec.int("max_input_tokens", None, min=1),
                  max_new_tokens=sec.int("max_new_tokens", None, min=1),
                  startup_extra_s=sec.float("startup_extra_s", 0.0, min=0.0))
    return None if profile is None else dict(profile=profile, **common)


class Seq:
    """One request inside an LLM server."""

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


class LlmServer(ModelServer):
    """Waiting → prefill pass → decoding batch → done. Subclasses decide admission, pass times and OOM."""

    def __init__(self, env: Any, pod: Any, spec: LlmSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.model = spec.profile.model
        self.gpu = spec.profile.gpu
        self.tp = spec.profile.tp
        self.waiting: deque[Seq] = deque()
        self.prefilling: list[Seq] = []
        self.running: list[Seq] = []
        self._seqs: dict[Any, Seq] = {}
        self._call = None
        self._busy = ""  # "", "prefill" or "decode"
        self._seg_t0 = 0.0
        self._seg_step = 0.0
        self._seg_oom = False
        self._scheduling = False
        self._crashed = False  # set by a process-killing OOM inside the current schedule: stop there
        self._fails = 0  # fail_all calls (to see whether pod.crash() reached us)
        self.stats = new_stats()
        self.batch_sizes = batch_log()  # (time, decoding batch size) at each change, the most recent ones
        self.max_batch = 0  # the largest decoding batch of the run

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
        seq = Seq(request, on_done, self.env.now)
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

    def first_byte_at(self, request: Any) -> float | None:
        seq = self._seqs.get(request)
        return None if seq is None or seq.ttfb is None else seq.t_submit + seq.ttfb

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
        self.max_batch = max(self.max_batch, len(self.running))
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
    def _oom_fail(self, victims: list[Seq]) -> None:
        """A CUDA OOM: with oom=process the pod crashes (fail_all via the pod); else the victims get 500."""
        self.stats["oom_events"] += 1
        if getattr(self.spec, "oom", "request") == "process":
            self.stats["oom_crashes"] += 1
            self._crashed = True
            crash_pod(self, OOM_REASON)
            return
        for seq in victims:
            self._seqs.pop(seq.req, None)
            if seq in self.running:
                self.running.remove(seq)
            self._release(seq)
            self.stats["oom_request_failures"] += 1
            seq.on_done(seq.req, SERVER_ERROR, None)

    # -- hooks -------------------------------------------------------------------------------------------
    def _admit(self) -> list[Seq]:
        raise NotImplementedError

    def _prefill_time(self, batch: list[Seq]) -> float:
        raise NotImplementedError

    def _step_time(self) -> float:
        raise NotImplementedError

    def _prefill_memory_check(self, batch: list[Seq]) -> list[Seq]:
        return batch

    def _decode_oom_steps(self) -> float | None:
        return None

    def _decode_oom(self) -> None:
        pass

    def _release(self, seq: Seq) -> None:
        pass

    def _reset_memory(self) -> None:
        pass

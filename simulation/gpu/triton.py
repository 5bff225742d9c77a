"""`triton`: Triton Inference Server's dynamic batcher in front of one vision model instance."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from validation.fields import Section
from simulation.clock import call_later
from simulation.gpu.memory import DEFAULT_NAIVE_OVERHEAD_GIB, naive_base_bytes, vision_activation_bytes
from simulation.gpu.profile import Profile, parse_profile
from simulation.gpu.roofline import DEFAULT_EFFICIENCY, Efficiency, vision_batch_time
from simulation.gpu.server_common import (BAD_REQUEST, EPS, OK, OOM_REASON, SERVER_ERROR, UNAVAILABLE,
                                          batch_log, crash_pod, efficiency, model_name, new_stats)
from simulation.server import ModelServer, OnDone, register_server


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
        profile = parse_profile(section, kinds=("vision",), default_model=model_name(model))
        eff = efficiency(section)
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
        self.capacity = self.gpu.cuda_total_bytes  # what the CUDA allocator can have (nvidia-smi shows ~0.45 GiB more)
        self.base = naive_base_bytes(self.model, spec.overhead_gib)
        self.stats = new_stats()
        self.batch_sizes = batch_log()  # the most recent batch sizes
        self.max_batch = 0

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
                crash_pod(self, OOM_REASON)
                return
            for it in batch:
                self._items.pop(it.req, None)
                self.stats["oom_request_failures"] += 1
                it.on_done(it.req, SERVER_ERROR, None)
            self._maybe_dispatch()
            return
        self.batch = batch
        self.batch_sizes.append(size)
        self.max_batch = max(self.max_batch, size)
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

"""What every GPU model server shares: status codes, the per-server counters, the crash helper and the
`server:` keys common to all of them (roofline efficiency factors — `interconnect_efficiency` and
`allreduce_latency_s` for tensor parallelism's all-reduces, the link's prior when absent — the scenario's model
name).

The servers: `llm_engine` (the continuous-batching timeline the LLM servers share), `vllm_v0`, `naive`,
`triton`; see docs/gpu-model.md.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from validation.fields import Section
from simulation.clock import NORMAL, scrapes_first
from simulation.gpu.roofline import DEFAULT_EFFICIENCY, Efficiency
from simulation.request import BAD_REQUEST, OK, SERVER_ERROR, UNAVAILABLE  # noqa: F401  the servers' codes

OOM_REASON = "CUDA out of memory"
EPS = 1e-9
BATCH_LOG = 1024  # batch sizes a server keeps (the most recent): memory stays flat however long the run


def new_stats() -> dict[str, int]:
    """Per-server counters (summed over pods by the report): see docs/gpu-model.md."""
    return {"rejected_400": 0, "oom_events": 0, "oom_request_failures": 0, "oom_crashes": 0, "completed": 0}


def batch_log() -> deque:
    """The most recent `BATCH_LOG` batch sizes a server dispatched (tests and debugging read them)."""
    return deque(maxlen=BATCH_LOG)


def crash_pod(server: Any, reason: str) -> None:
    """The server process dies: the pod fails everything in flight (502) and restarts the container. A pod
    that ignores the crash (already terminating) still loses the process: fail the work here (500)."""
    before = server._fails
    server.pod.crash(reason)
    if server._fails == before:
        server.fail_all(SERVER_ERROR)


class Tick:
    """A server's next batch change as one reusable SimPy event (as `clock.Recurring`), not a new `clock.Call` per
    segment: the server sets `callbacks` and passes it to `Environment.schedule`; SimPy clears `callbacks` when it
    pops it. To cancel, set `callbacks = ()` (SimPy cannot take an event off its queue: it pops as a no-op) and
    schedule a fresh Tick from then on."""

    __slots__ = ("callbacks",)
    _ok = True
    _value = None

    def __init__(self) -> None:
        self.callbacks = None


def schedule_tick(env: Any, tick: Tick, delay: float, run: tuple) -> Tick:
    """Schedule `tick` to call `run`'s callbacks `delay` from now, ordered as `clock.call_later` orders a Call (on
    a whole second, after the KPA scrapes it follows: `clock.scrapes_first`)."""
    at = env._now + delay
    hook = None if at % 1.0 else scrapes_first(env, at)
    tick.callbacks = run if hook is None else (hook,) + run
    env.schedule(tick, NORMAL, delay)
    return tick


def efficiency(sec: Section) -> Efficiency:
    d = DEFAULT_EFFICIENCY
    return Efficiency(
        memory=sec.float("memory_efficiency", d.memory, min=0.0, min_exclusive=True, max=1.0),
        compute=sec.float("compute_efficiency", d.compute, min=0.0, min_exclusive=True, max=1.0),
        step_overhead_s=sec.float("step_overhead_s", d.step_overhead_s, min=0.0),
        prefill_overhead_s=sec.float("prefill_overhead_s", d.prefill_overhead_s, min=0.0),
        interconnect=sec.float("interconnect_efficiency", d.interconnect, min=0.0, min_exclusive=True, max=1.0),
        allreduce_latency_s=sec.float("allreduce_latency_s", d.allreduce_latency_s, min=0.0, max=1.0),
    )


def model_name(model: Any) -> str | None:
    """The core may pass the scenario's model (a name, a mapping with `name`, or None)."""
    if isinstance(model, str):
        return model
    if isinstance(model, dict):
        return model.get("name")
    return getattr(model, "name", None)

"""Model-server plug-in contract and the `simple` server.

A model server sits behind the queue-proxy in each pod (in Standard mode, directly behind the Service).
The queue-proxy hands it at most `containerConcurrency` requests at a time (unlimited when CC = 0), so
the server sees only admitted requests; anything the server itself rejects is the server's answer
(e.g. HF TGI answers 429 `Model is overloaded` above `max_concurrent_requests`,
`huggingface/text-generation-inference router/src/infer/mod.rs`; Triton answers 503 `Exceeds maximum
queue size`, triton core `RequestQueue::Enqueue`; the KServe Python server never answers 429 —
see reference knative-kserve.md §4–§5).

Contract (stable; other modules in `simulation/gpu/` implement it):

    class MyServer(ModelServer):
        kind = "my-kind"
        @classmethod
        def parse_spec(cls, section, model): ...   # read the scenario's `server:` keys (a validation.fields.Section,
                                                   # `kind` already read); return any spec object; record problems
        def __init__(self, env, pod, spec, rng)    # env: simpy.Environment, pod: simulation.pod.Pod,
                                                   # rng: random.Random private to this pod (seeded)
        def check(self, request) -> int | None     # reject before using the GPU: 400 / 429 / 503 ..., or None
        def submit(self, request, on_done)         # start it; later call on_done(request, status, ttfb_s)
        def cancel(self, request)                  # caller gave up (timeout / disconnect): drop it, no on_done
        def fail_all(self, status)                 # pod dies: call on_done(r, status, None) for all in flight
        in_flight: int (property)                  # requests currently inside the server
        def startup_error(self) -> str | None      # asked when the container has loaded; a reason → the
                                                   # container exits and is restarted (never becomes ready)
        def startup_extra_s(self) -> float         # extra start-up seconds (e.g. CUDA graphs), default 0
        def first_byte_at(self, request)           # when its first byte went out (a stream under way), or None:
                                                   # past the revision timeout it is cut off, not answered 504

    register_server(MyServer)                      # makes `server.kind: my-kind` valid in scenarios

`on_done(request, status, ttfb_s)`: status 200 on success, anything else on failure; `ttfb_s` is the
seconds from `submit` to the first response byte (None on failure). A server may call `self.pod.crash(reason)`
at any time (e.g. CUDA OOM): the pod fails everything in flight (502 from the queue-proxy, the app connection
is gone — `vendor/knative.dev/pkg/network/error_handler.go`) and its container restarts with back-off.
Schedule work with `simulation.clock.call_later(env, delay, fn, *args)`, which returns a handle with
`cancel()`: one completion event per request (or one per pod for continuous batching, rescheduled when the
batch changes) — never a SimPy process per token.
"""

from __future__ import annotations

import importlib
import random
from math import exp as _exp, log as _log
from dataclasses import dataclass
from typing import Any, Callable

from simulation.clock import scrapes_first
from validation.fields import Section

OnDone = Callable[[Any, int, "float | None"], None]


class ModelServer:
    """Base class; see the module docstring for the contract."""

    kind = "base"

    def __init__(self, env: Any, pod: Any, spec: Any, rng: random.Random) -> None:
        self.env = env
        self.pod = pod
        self.spec = spec
        self.rng = rng

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def check(self, request: Any) -> int | None:
        return None

    def submit(self, request: Any, on_done: OnDone) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def cancel(self, request: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def fail_all(self, status: int) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def in_flight(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def startup_error(self) -> str | None:
        return None

    def startup_extra_s(self) -> float:
        return 0.0

    def first_byte_at(self, request: Any) -> float | None:
        return None


_REGISTRY: dict[str, type[ModelServer]] = {}
_PLUGIN_MODULES = ("simulation.servers_llm",)  # imported on first lookup if present (owned by the GPU work)
_plugins_loaded = False


def register_server(cls: type[ModelServer]) -> type[ModelServer]:
    """Register a server class under `cls.kind` (usable as a decorator)."""
    _REGISTRY[cls.kind] = cls
    return cls


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for name in _PLUGIN_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def server_kinds() -> list[str]:
    _load_plugins()
    return sorted(_REGISTRY)


def get_server(kind: str) -> type[ModelServer] | None:
    _load_plugins()
    return _REGISTRY.get(kind)


# ---------------------------------------------------------------------------------------------------
# The simple server
# ---------------------------------------------------------------------------------------------------

DISTRIBUTIONS = ("exponential", "deterministic", "lognormal")


@dataclass(frozen=True)
class SimpleServerSpec:
    """Service time S = (base_s + per_input_token_s·in + per_output_token_s·out) · X · (1 + slowdown·(n−1)).

    X is a unit-mean random factor (`distribution`), n the number of requests in the server when this one
    starts (frozen for the request: a simplification of processor sharing). The first byte is sent after the
    input part: TTFB = (base_s + per_input_token_s·in) · X · slowdown-factor.
    `max_concurrent` (None = unbounded, as the KServe Python server and vLLM) answers `reject_status` (429 as
    TGI, 503 as Triton) when exceeded; `max_input_tokens` answers 400.
    """

    base_s: float = 0.1
    per_input_token_s: float = 0.0
    per_output_token_s: float = 0.0
    distribution: str = "exponential"
    sigma: float = 0.5
    slowdown_per_concurrent: float = 0.0
    max_concurrent: int | None = None
    reject_status: int = 503
    max_input_tokens: int | None = None
    parallelism: int | None = None


@register_server
class SimpleServer(ModelServer):
    """Independent service per request (c parallel servers = the queue-proxy's CC slots)."""

    kind = "simple"

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> SimpleServerSpec:
        d = SimpleServerSpec()
        max_conc = section.int("max_concurrent", None, min=1)
        return SimpleServerSpec(
            base_s=section.float("base_s", d.base_s, min=0.0),
            per_input_token_s=section.float("per_input_token_s", d.per_input_token_s, min=0.0),
            per_output_token_s=section.float("per_output_token_s", d.per_output_token_s, min=0.0),
            distribution=section.choice("distribution", DISTRIBUTIONS, d.distribution),
            sigma=section.float("sigma", d.sigma, min=0.0, max=5.0),
            slowdown_per_concurrent=section.float("slowdown_per_concurrent", 0.0, min=0.0),
            max_concurrent=max_conc,
            reject_status=int(section.choice("reject_status", [429, 503], 503)),
            max_input_tokens=section.int("max_input_tokens", None, min=1),
            parallelism=section.int("parallelism", None, min=1),
        )

    def __init__(self, env: Any, pod: Any, spec: SimpleServerSpec, rng: random.Random) -> None:
        super().__init__(env, pod, spec, rng)
        self.calls: dict[Any, tuple] = {}    # in service: request → (on_done, ttfb)
        self._done = (self._finish,)
        self._queue: dict[Any, tuple] = {}    # waiting (parallelism reached): request → (on_done, submit time)
        self._random = rng.random
        self._dist = spec.distribution
        self._mu = -spec.sigma * spec.sigma / 2.0  # lognormal with mean 1
        self._par = spec.parallelism
        self._per_token = spec.per_input_token_s or spec.per_output_token_s
        self.plain = self.is_plain(spec)

    @staticmethod
    def is_plain(spec: SimpleServerSpec) -> bool:
        """No admission limit and no parallelism cap: `check` always passes and every request starts at once."""
        return spec.max_input_tokens is None and spec.max_concurrent is None and spec.parallelism is None

    @property
    def in_flight(self) -> int:
        return len(self.calls) + len(self._queue)

    def check(self, request: Any) -> int | None:
        spec = self.spec
        if spec.max_input_tokens is not None and request.input_tokens > spec.max_input_tokens:
            return 400
        if spec.max_concurrent is not None and self.in_flight >= spec.max_concurrent:
            return spec.reject_status
        return None

    def submit(self, request: Any, on_done: OnDone) -> None:
        if self._par is not None and len(self.calls) >= self._par:
            self._queue[request] = (on_done, self.env._now)
            return
        self.start(request, self._done, on_done, 0.0)

    def start(self, request: Any, done: tuple, on_done: OnDone, waited: float) -> None:
        """Draw the service time and schedule the request itself as its completion event: at its end SimPy
        calls `done` (a 1-tuple: `self._done`, or the fused path's) with the request."""
        spec = self.spec
        dist = self._dist
        if dist == "exponential":
            x = -_log(1.0 - self._random())   # rng.expovariate(1.0): the same draw without the call
        elif dist == "deterministic":
            x = 1.0
        else:
            x = _exp(self.rng.gauss(self._mu, spec.sigma))
        if spec.slowdown_per_concurrent:
            x *= 1.0 + spec.slowdown_per_concurrent * len(self.calls)
        if self._per_token:
            first = (spec.base_s + spec.per_input_token_s * request.input_tokens) * x
            total = first + spec.per_output_token_s * request.output_tokens * x
        else:   # the same floats: adding 0.0 changes nothing
            first = total = spec.base_s * x
        self.calls[request] = (on_done, waited + first)
        request.callbacks = done
        if not (self.env._now + total) % 1.0:   # on a whole second: maybe after a KPA scrape (clock.scrapes_first)
            hook = scrapes_first(self.env, self.env._now + total)
            if hook is not None:
                request.callbacks = (hook,) + done
        self.env.schedule(request, 1, total)   # priority NORMAL, as `call_later`

    def first_byte_at(self, request: Any) -> float | None:
        entry = self.calls.get(request)
        if entry is None:
            return None
        at = request.t_start + entry[1]
        return at if at <= self.env._now else None

    def _finish(self, request: Any) -> None:
        entry = self.calls.pop(request, None)
        if entry is None:
            return   # cancelled (timeout, disconnect) or failed (pod died): its completion event is void
        if self._queue:
            self._next()
        entry[0](request, 200, entry[1])

    def _next(self) -> None:
        while self._queue and len(self.calls) < self._par:
            request = next(iter(self._queue))
            on_done, t = self._queue.pop(request)
            self.start(request, self._done, on_done, self.env._now - t)

    def cancel(self, request: Any) -> None:
        if self._queue.pop(request, None) is not None:
            return
        if self.calls.pop(request, None) is not None and self._queue:
            self._next()

    def fail_all(self, status: int) -> None:
        calls, self.calls = self.calls, {}
        queued, self._queue = self._queue, {}
        for request, (on_done, _) in list(calls.items()):
            on_done(request, status, None)
        for request, (on_done, _) in list(queued.items()):
            on_done(request, status, None)

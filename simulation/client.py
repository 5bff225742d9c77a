"""Clients: per-attempt timeout, retries with exponential back-off and jitter, and a retry budget.

Every retry is a new attempt through the whole path (gateway → activator/queue-proxy → server), so retries
add load: a retry storm is part of the simulated failure story. The user-visible outcome of a request is the
status of its last attempt; its latency runs from the first attempt to the final answer (back-off included).
Back-off and jitter: AWS Architecture Blog, "Exponential Backoff And Jitter" (full / equal jitter).
Retry budget: gRPC retry throttling (gRFC A6): a token bucket of `max_tokens`; each failed attempt removes one
token, each success adds `token_ratio`; retrying is allowed only while tokens > max_tokens / 2.
A client timeout is recorded as 504 with component `client-timeout` (the client gave up; the server never
answered); it cancels the attempt downstream, as a closed connection does through Envoy and the queue-proxy.
"""

from __future__ import annotations

from typing import Any

from simulation.clock import call_later


class Client:
    def __init__(self, sim: Any, spec: Any) -> None:
        self.sim = sim
        self.env = sim.env
        self.spec = spec
        self.rng = sim.rng_client
        self.retry_on = frozenset(spec.retry_on)
        self.tokens = spec.budget_max_tokens
        self.retries = 0
        self.retries_denied = 0
        self.backing_off: dict[int, Any] = {}   # attempt id → the failed attempt whose retry is scheduled

    @property
    def pending_retries(self) -> int:
        """Retries scheduled and not yet sent."""
        return len(self.backing_off)

    def on_response(self, req: Any) -> bool:
        """Called with every answered attempt; returns True if a retry was scheduled (not final)."""
        spec = self.spec
        status = req.status
        tokens = self.tokens
        if tokens is not None:
            if status == 200:
                tokens += spec.budget_token_ratio
                cap = spec.budget_max_tokens
                self.tokens = tokens if tokens < cap else cap   # min(cap, tokens)
            else:
                self.tokens = max(0.0, self.tokens - 1.0)
        if status == 200 or status not in self.retry_on or req.attempt >= spec.max_retries:
            return False
        if self.tokens is not None and self.tokens <= spec.budget_max_tokens / 2.0:
            self.retries_denied += 1
            return False
        d = min(spec.backoff_max_s, spec.backoff_base_s * spec.backoff_multiplier ** req.attempt)
        if spec.jitter == "full":
            d = self.rng.random() * d
        elif spec.jitter == "equal":
            d = d / 2.0 + self.rng.random() * d / 2.0
        self.retries += 1
        self.backing_off[req.id] = req
        call_later(self.env, d, self._retry, req)
        return True

    def _retry(self, prev: Any) -> None:
        del self.backing_off[prev.id]
        self.sim.send(prev.origin, prev.origin_t, prev.attempt + 1, prev.input_tokens, prev.output_tokens,
                      prev.measured)

"""Clients: per-attempt timeout, retries with exponential back-off and jitter, and a retry budget.

Every retry is a new attempt through the whole path (gateway → activator/queue-proxy → server), so retries
add load: a retry storm is part of the simulated failure story. The user-visible outcome of a request is the
status of its last attempt; its latency runs from the first attempt to the final answer (back-off included).
Back-off and jitter: AWS Architecture Blog, "Exponential Backoff And Jitter" (full / equal jitter).
Retry budget: gRPC retry throttling (gRFC A6): a token bucket of `max_tokens`; each failed attempt removes one
token, each success adds `token_ratio`; retrying is allowed only while tokens > max_tokens / 2.
Retries are bounded at run time: the request budget (`max_requests`, simulation/budget.py) counts the arrivals
before the run, and the client may retry as many times again (`retry_limit`); one retry more stops the run with
an InputError naming client.max_retries and max_requests. Not counted before the run as (1 + max_retries) ×
arrivals: most runs retry a fraction of their requests, and that worst case (21× at max_retries 20) would refuse
shipped scenarios that retry a few requests; a run-time bound caps the attempts at twice the budget instead.
A client timeout is recorded as 504 with component `client-timeout` (the client gave up; the server never
answered); it cancels the attempt downstream, as a closed connection does through Envoy and the queue-proxy.
"""

from __future__ import annotations

from typing import Any

from simulation.clock import call_later
from validation.errors import InputError, Problem


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
        self.retry_limit = getattr(getattr(sim, "scenario", None), "max_requests", None)
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
        if self.retry_limit is not None and self.retries > self.retry_limit:
            raise self._too_many_retries()
        self.backing_off[req.id] = req
        call_later(self.env, d, self._retry, req)
        return True

    def _too_many_retries(self) -> InputError:
        spec, limit = self.spec, self.retry_limit
        codes = ", ".join(str(c) for c in spec.retry_on)
        return InputError([Problem("client.max_retries", spec.max_retries, (
            f"expected the client's retries to stay within the run's request budget (max_requests {limit:,}, "
            f"retries allowed as many again as the arrivals it counts): the client had retried {limit:,} failed "
            f"attempts (status {codes}) by t = {self.env.now:,.1f} s, each one more simulated attempt, so the run "
            "stopped. Lower client.max_retries or add client.retry_budget (a retry then needs tokens that only "
            "successes give back), or raise max_requests (or --max-requests)"))])

    def _retry(self, prev: Any) -> None:
        del self.backing_off[prev.id]
        self.sim.send(prev.origin, prev.origin_t, prev.attempt + 1, prev.input_tokens, prev.output_tokens,
                      prev.measured)

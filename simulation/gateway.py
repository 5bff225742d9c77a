"""Ingress gateway: an optional token-bucket rate limit (→ 429) and a route timeout (→ 504).

In a Knative/KServe path a 429 comes only from here (Envoy `local_rate_limit` filter, status configurable) or
from a model server with an admission limit: Knative itself never answers 429 (reference knative-kserve.md §5,
knative/serving#602). Token bucket: capacity `burst`, refilled at `rate_per_s`; a request takes one token.
The route timeout is measured from the request's arrival (Istio: no route timeout by default).
"""

from __future__ import annotations

from typing import Any


class Gateway:
    __slots__ = ("env", "rate", "burst", "tokens", "last", "status")

    def __init__(self, env: Any, spec: Any) -> None:
        self.env = env
        self.rate = spec.rate_limit_per_s
        self.burst = spec.burst
        self.tokens = spec.burst
        self.last = 0.0
        self.status = spec.limit_status

    def admit(self) -> int | None:
        """None if the request may pass, else the status to answer."""
        if self.rate is None:
            return None
        now = self.env._now
        tokens = self.tokens + (now - self.last) * self.rate
        if tokens > self.burst:
            tokens = self.burst
        self.last = now
        if tokens >= 1.0:
            self.tokens = tokens - 1.0
            return None
        self.tokens = tokens
        return self.status

"""The client's retry budget and back-off, step by step (simulation/client.py) against gRFC A6 retry throttling:
tokens start at max_tokens, a failed attempt takes 1 (never below 0), a success gives token_ratio back (never above
max_tokens), and a retry is allowed only while tokens > max_tokens / 2 (checked after the failure's decrement).
Back-off before retry n: min(backoff_max_s, base · multiplier^(n−1)), then full or equal jitter (AWS Architecture
Blog, "Exponential Backoff And Jitter"). The scenario test (test_request_path) asks only for "some retries denied"
and "fewer retries than without a budget", which any threshold, ratio, cap or floor passes."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import simpy

from simulation.client import Client
from simulation.scenario import ClientSpec

from tests.path_fakes import req

_ids = iter(range(10**6))


def _client(**kw) -> tuple[Client, simpy.Environment, list]:
    """A client on a fake sim whose `send` records (time, attempt) of each retry sent."""
    sent: list = []
    env = simpy.Environment()
    sim = SimpleNamespace(env=env, rng_client=random.Random(1),
                          send=lambda origin, origin_t, attempt, *a: sent.append((env.now, attempt)))
    spec = ClientSpec(**{"max_retries": 100, "backoff_base_s": 1.0, "backoff_multiplier": 2.0,
                         "backoff_max_s": 30.0, "jitter": "none", **kw})
    return Client(sim, spec), env, sent


def _answer(client: Client, status: int, attempt: int = 0) -> bool:
    r = req(next(_ids))
    r.status, r.attempt = status, attempt
    return client.on_response(r)


def _retries_until_denied(client: Client) -> int:
    n = 0
    while _answer(client, 503):
        n += 1
    return n


def test_a_retry_is_throttled_once_tokens_reach_half_of_max_tokens():
    """10 tokens: failures leave 9, 8, 7, 6 (> 5: retried), then 5 (<= 10 / 2: denied)."""
    c, _, _ = _client(budget_max_tokens=10, budget_token_ratio=0.1)
    assert _retries_until_denied(c) == 4
    assert c.retries == 4 and c.retries_denied == 1 and c.tokens == 5


def test_a_success_gives_token_ratio_back_up_to_max_tokens():
    c, _, _ = _client(budget_max_tokens=10, budget_token_ratio=0.1)
    _answer(c, 200)                               # already full: stays 10, not 10.1
    assert c.tokens == 10
    assert _retries_until_denied(c) == 4          # from 10, not from 10.1 (which would allow a fifth)
    for _ in range(10):                           # 5 + 10 × 0.1
        _answer(c, 200)
    assert c.tokens == pytest.approx(6.0)
    assert _retries_until_denied(c) == 0          # 6 − 1 = 5: denied at once


def test_tokens_never_go_below_zero():
    """A long outage empties the bucket but does not drive it negative: recovery starts from 0."""
    c, _, _ = _client(budget_max_tokens=10, budget_token_ratio=0.1)
    for _ in range(20):
        _answer(c, 503)
    assert c.tokens == 0
    for _ in range(70):                           # 0 + 7.0
        _answer(c, 200)
    assert _answer(c, 503)                        # 7 − 1 = 6 > 5: retried (from −10 it would be −4: denied)


def test_backoff_grows_from_the_base_and_is_capped():
    """Retries 1, 3 and 7 wait 1 s, 1·2² = 4 s and min(30, 1·2⁶) = 30 s."""
    c, env, sent = _client()
    for attempt in (0, 2, 6):
        assert _answer(c, 503, attempt)
    assert c.pending_retries == 3
    env.run()
    assert sent == [(1.0, 1), (4.0, 3), (30.0, 7)]
    assert c.pending_retries == 0


@pytest.mark.parametrize("jitter, delay", [("full", lambda u, d: u * d), ("equal", lambda u, d: d / 2 + u * d / 2)])
def test_jitter_draws_from_the_client_stream(jitter, delay):
    """full: U(0, d); equal: d/2 + U(0, d/2), with d = 4 s for retry 3 (the client's own random stream)."""
    c, env, sent = _client(jitter=jitter)
    u = random.Random(1).random()                 # the first draw of the client's stream
    assert _answer(c, 503, attempt=2)
    env.run()
    assert sent == [(pytest.approx(delay(u, 4.0)), 3)]


def test_max_retries_counts_the_attempts_after_the_first_and_only_retry_on_statuses_retry():
    c, _, _ = _client(max_retries=3)
    assert _answer(c, 503, attempt=2) and not _answer(c, 503, attempt=3)
    assert not _answer(c, 500)                    # not in retry_on
    assert c.retries == 1

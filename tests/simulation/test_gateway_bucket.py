"""The gateway's token bucket (`simulation/gateway.py`, Envoy `local_rate_limit`) against its closed forms: a full
bucket passes `burst` requests at once and refuses the next; an empty one passes one request every 1/rate; under
Poisson arrivals at λ > rate the long-run pass fraction is rate/λ."""

import random
from types import SimpleNamespace

import pytest

from simulation.gateway import Gateway
from simulation.scenario import GatewaySpec


def bucket(rate, burst, status=429):
    env = SimpleNamespace(_now=0.0)
    return env, Gateway(env, GatewaySpec(rate_limit_per_s=rate, burst=burst, limit_status=status))


def passes(env, gw, t, n=1):
    """How many of n requests arriving at time t pass."""
    env._now = t
    return sum(gw.admit() is None for _ in range(n))


def test_no_rate_limit_passes_everything():
    env, gw = bucket(None, 1.0)
    assert passes(env, gw, 0.0, 1000) == 1000


@pytest.mark.parametrize("burst", [1, 5, 10])
def test_a_full_bucket_passes_burst_requests_and_refuses_the_next(burst):
    env, gw = bucket(4.0, float(burst), status=503)
    assert [gw.admit() for _ in range(burst + 1)] == [None] * burst + [503]
    # long idle: the bucket refills to burst, never above it
    assert passes(env, gw, 1000.0, burst + 3) == burst
    assert gw.admit() == 503


def test_an_empty_bucket_passes_one_request_every_one_over_rate():
    env, gw = bucket(4.0, 3.0)  # 1/rate = 0.25 s, exact in binary
    assert passes(env, gw, 0.0, 10) == 3
    for k in range(1, 41):
        t = k * 0.25
        assert passes(env, gw, t - 0.125) == 0, t  # half a token: refused
        assert passes(env, gw, t, 2) == 1, t  # one token exactly: one passes, the next is refused
    # the refused ones took nothing: a pause of 2 s gives 8 tokens, capped at the burst of 3
    assert passes(env, gw, 10.0 + 2.0, 10) == 3


def test_refill_above_the_burst_is_lost():
    env, gw = bucket(4.0, 3.0)
    assert passes(env, gw, 0.0, 4) == 3  # drained
    assert passes(env, gw, 0.875, 4) == 3  # 3.5 tokens refilled, the bucket holds 3
    assert passes(env, gw, 1.0) == 0  # half a token since: the half above the burst was not kept
    assert passes(env, gw, 1.125) == 1


def test_poisson_overload_passes_rate_over_lambda():
    # λ = 10/s against 4/s, burst 5: over T seconds about 4T + 5 pass of about 10T (the bucket is empty almost
    # always, so little refill is lost to the cap). Replications give a 99 % interval for the pass fraction.
    rate, lam, horizon = 4.0, 10.0, 400.0
    fractions = []
    for seed in range(10):
        rng = random.Random(seed)
        env, gw = bucket(rate, 5.0)
        t, arrived, passed = 0.0, 0, 0
        while True:
            t += rng.expovariate(lam)
            if t > horizon:
                break
            arrived += 1
            passed += passes(env, gw, t)
        fractions.append(passed / arrived)
    n = len(fractions)
    mean = sum(fractions) / n
    sd = (sum((f - mean) ** 2 for f in fractions) / (n - 1)) ** 0.5
    half = 3.250 * sd / n ** 0.5  # t(0.995, 9 df)
    assert mean - half <= rate / lam <= mean + half, (mean, half)
    assert half < 0.02 * rate / lam  # tight enough that a bucket refilling 5 % fast or slow falls outside

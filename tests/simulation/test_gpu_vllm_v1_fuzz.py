"""The V1 engine under random loads, memory sizes, budgets and cancellations: every request is answered once,
output tokens are conserved, the KV pool never holds more than it has, and it drains to empty."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

import gpu_fakes
from gpu_fakes import Log, req


@settings(max_examples=40, deadline=None)
@given(util=st.floats(0.211, 0.3), budget=st.sampled_from([256, 512, 2048]), seqs=st.sampled_from([4, 64, 256]),
       hit=st.sampled_from([0.0, 0.5]), n=st.integers(1, 40), seed=st.integers(0, 10_000),
       cancel=st.booleans())
def test_every_request_is_answered_and_tokens_are_conserved(util, budget, seqs, hit, n, seed, cancel):
    seqs = min(seqs, budget)
    env, pod, s = gpu_fakes.make("vllm", {"model": "llama-3-8b", "gpu": "A100-80GB", "max_model_len": 2048,
                                          "gpu_memory_utilization": util, "max_num_batched_tokens": budget,
                                          "max_num_seqs": seqs, "prefix_cache_hit_ratio": hit})
    rng = random.Random(seed)
    log = Log(env)
    reqs = [req(i, rng.randint(1, 1500), rng.randint(1, 548)) for i in range(n)]
    cancelled, submitted = set(), set()

    def arrive(r, at):
        yield env.timeout(at)
        submitted.add(r.id)
        s.submit(r, log)

    def cancel_later(r, at):
        yield env.timeout(at)
        if r.id in submitted and r.id not in log.rows:
            s.cancel(r)
            cancelled.add(r.id)

    for r in reqs:
        env.process(arrive(r, rng.uniform(0, 5)))
        if cancel and rng.random() < 0.2:
            env.process(cancel_later(r, rng.uniform(0, 10)))
    high = 0
    while env.peek() != float("inf"):
        env.step()
        high = max(high, s.kv_used())
    assert high <= s.cap
    assert set(log.rows) | cancelled == {r.id for r in reqs} and not set(log.rows) & cancelled
    assert all(v[0] == 200 for v in log.rows.values())
    if not cancelled:
        assert s.sampled_tokens == sum(r.output_tokens for r in reqs)
    assert s.kv_used() == 0 and s.in_flight == 0 and not s.running and not s.waiting

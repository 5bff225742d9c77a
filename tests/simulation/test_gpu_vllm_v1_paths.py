"""The V1 engine's decode-only plan (`VllmV1Engine._plan_decode`, most segments) is a shortcut of the general
plan (`_plan_step`): under random loads — cuts by arrivals, cancellations, preemptions, prefix hits, a
sliding-window model, a crash — both give the same answers at the same float times, the same first-byte times
and the same counters."""

import random

import pytest

import gpu_fakes
from gpu_fakes import Log, req
from simulation.gpu.vllm_v1 import VllmV1Engine


def _run(case: int, shortcut: bool):
    rng = random.Random(case)
    model, max_len = rng.choice([("llama-3-8b", 2048), ("mistral-7b", 8192)])  # mistral: a 4,096-token window
    budget = rng.choice([256, 2048, 8192])
    env, pod, s = gpu_fakes.make("vllm", {
        "model": model, "gpu": "A100-80GB", "max_model_len": max_len,
        "gpu_memory_utilization": rng.uniform(0.211, 0.4), "max_num_batched_tokens": budget,
        "max_num_seqs": min(rng.choice([4, 16, 256]), budget), "prefix_cache_hit_ratio": rng.choice([0.0, 0.5])})
    planned = []
    if shortcut:
        decode = s._plan_decode
        s._plan_decode = lambda: planned.append(1) or decode()
    else:
        s._plan_decode = lambda: False  # every segment from the general plan
    log, probes = Log(env), []
    n, span = rng.randint(5, 60), rng.choice([1.0, 10.0, 60.0])
    reqs = [req(i, rng.randint(1, max_len // 2), rng.randint(2, max_len // 4)) for i in range(n)]

    def at(t, fn):
        def proc():
            yield env.timeout(t)
            fn()
        env.process(proc())

    for r in reqs:
        at(rng.uniform(0, span), lambda r=r: s.submit(r, log))
        if rng.random() < 0.15:
            at(rng.uniform(0, 2 * span), lambda r=r: r.id in s._reqs and s.cancel(r))
        if rng.random() < 0.3:
            at(rng.uniform(0, 2 * span), lambda r=r: probes.append((r.id, env.now, s.first_byte_at(r), s.kv_used())))
    if rng.random() < 0.1:
        at(rng.uniform(0, span), lambda: pod.crash("test"))
    env.run()
    out = (log.rows, probes, s.stats, s.max_batch, s.sampled_tokens, s.prefill_tokens, s.steps, s.kv_used())
    return out, len(planned)


@pytest.mark.parametrize("case", range(40))
def test_the_decode_only_plan_gives_the_general_plans_timeline(case):
    fast, planned = _run(case, shortcut=True)
    general, _ = _run(case, shortcut=False)
    assert fast == general
    assert planned  # the shortcut was taken


def test_the_shortcut_declines_a_step_the_pool_cannot_hold():
    """A decode batch that outgrows a small pool is preempted by the general plan, not planned by the shortcut."""
    env, pod, s = gpu_fakes.make("vllm", {"model": "llama-3-8b", "gpu": "A100-80GB", "max_model_len": 2048,
                                          "gpu_memory_utilization": 0.211, "max_num_batched_tokens": 2048,
                                          "max_num_seqs": 64})
    declined = []
    decode = VllmV1Engine._plan_decode
    s._plan_decode = lambda: decode(s) or declined.append(1)
    log = Log(env)
    for i in range(40):
        s.submit(req(i, 1000, 1000), log)
    env.run()
    assert declined and s.stats["preemptions"] > 0 and len(log.rows) == 40

"""vLLM V1 engine (`scheduler: v1`, the default): limit cases against the roofline, token conservation,
agreement with `scheduler: v0` at low load, preemption when the KV pool is oversubscribed, the version's
defaults by GPU class."""

import random

import pytest

from catalog import DEFAULT
from simulation.gpu.roofline import StepCost, decode_step_time, prefill_time
from simulation.gpu.vllm_v1 import VllmV1Engine

import gpu_fakes
from gpu_fakes import Log, req

LLAMA3, A100, H100 = DEFAULT.models["llama-3-8b"], DEFAULT.gpus["A100-80GB"], DEFAULT.gpus["H100-80GB"]


def make(data, env=None):
    return gpu_fakes.make("vllm", data, env)


def spec_of(data):
    return gpu_fakes.spec_of("vllm", data)


def test_v1_is_the_default_and_v0_stays_available():
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})
    assert isinstance(s, VllmV1Engine)
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB", "scheduler": "v0"})
    assert type(s).__name__ == "VllmV0Engine"
    _, problems = spec_of({"model": "llama-3-8b", "gpu": "A100-80GB", "scheduler": "v2"})
    assert problems and "scheduler" in str(problems[0])


def test_batch_defaults_follow_get_batch_defaults_by_gpu_class():
    h100, _ = spec_of({"model": "llama-3-8b", "gpu": "H100-80GB"})
    a100, _ = spec_of({"model": "llama-3-8b", "gpu": "A100-80GB"})
    a10g, _ = spec_of({"model": "llama-3-8b", "gpu": "A10G", "max_model_len": 4096})
    v0, _ = spec_of({"model": "llama-3-8b", "gpu": "H100-80GB", "scheduler": "v0"})
    assert (h100.max_num_batched_tokens, h100.max_num_seqs) == (8192, 1024)
    assert (a100.max_num_batched_tokens, a100.max_num_seqs) == (2048, 256)  # ≥ 70 GiB but an A100
    assert (a10g.max_num_batched_tokens, a10g.max_num_seqs) == (2048, 256)
    assert (v0.max_num_batched_tokens, v0.max_num_seqs) == (8192, 256)  # max(max_model_len, 2048)



def test_defaults_fit_a_given_budget_and_an_explicit_conflict_is_refused():
    """vllm/engine/arg_utils.py `_set_default_max_num_seqs_and_batched_tokens_args`: an unset max_num_seqs is
    min(default, max_num_batched_tokens); an unset budget at most max_num_seqs × max_model_len; only an explicit
    max_num_seqs above the budget is refused (SchedulerConfig._verify_args)."""
    small, problems = spec_of({"model": "llama-3-8b", "gpu": "H100-80GB", "max_num_batched_tokens": 512})
    assert not problems and (small.max_num_batched_tokens, small.max_num_seqs) == (512, 512)
    tiny, problems = spec_of({"model": "llama-3-8b", "gpu": "A10G", "max_num_batched_tokens": 100})
    assert not problems and (tiny.max_num_batched_tokens, tiny.max_num_seqs) == (100, 100)
    short, problems = spec_of({"model": "llama-3-8b", "gpu": "H100-80GB", "max_num_seqs": 2, "max_model_len": 1024})
    assert not problems and (short.max_num_batched_tokens, short.max_num_seqs) == (2048, 2)   # min(2 × 1024, 8192)
    _, problems = spec_of({"model": "llama-3-8b", "gpu": "A100-80GB", "max_num_batched_tokens": 100,
                           "max_num_seqs": 256})
    assert problems and "max_num_batched_tokens" in str(problems[0])


def test_single_request_ttft_is_the_chunked_prefill_and_tpot_the_decode_step():
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})  # budget 2048
    log = Log(env)
    s.submit(req(1, 5000, 101), log)
    env.run()
    status, ttfb, t_done = log.rows[1]
    cost = StepCost.of(LLAMA3, A100)
    chunks, done, expected = [2048, 2048, 904], 0, 0.0
    for c in chunks:
        expected += cost.time(c, done + c, c * (done + c / 2), True)
        done += c
    assert status == 200 and ttfb == pytest.approx(expected, rel=1e-12)
    # 100 decode steps, each the roofline decode step of one sequence at its growing context
    tpot = sum(decode_step_time(LLAMA3, A100, 1, 5000 + j) for j in range(1, 101)) / 100
    assert (t_done - ttfb) / 100 == pytest.approx(tpot, rel=1e-9)
    # a prompt within one step's budget: exactly the one-pass prefill time
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    s.submit(req(2, 1000, 1), log)
    env.run()
    assert log.rows[2][1] == pytest.approx(prefill_time(LLAMA3, A100, 1000), rel=1e-12)
    assert log.rows[2][2] == log.rows[2][1]  # one output token: sampled by the prefill step


def test_step_cost_limits_equal_the_prefill_and_decode_rooflines():
    cost = StepCost.of(LLAMA3, H100)
    assert cost.time(3000, 3000, 3000 * 1500, True) == pytest.approx(prefill_time(LLAMA3, H100, 3000))
    assert cost.time(16, 16 * 900, 16 * 900, False) == pytest.approx(decode_step_time(LLAMA3, H100, 16, 16 * 900))


def _load(s, env, log, n, rate, inp, out, seed=7):
    rng = random.Random(seed)
    t = 0.0
    for i in range(n):
        t += rng.expovariate(rate)
        env.process(_later(env, t, s, req(i, rng.randint(*inp), rng.randint(*out)), log))


def _later(env, t, s, r, log):
    yield env.timeout(t - env.now)
    s.submit(r, log)


def test_tokens_are_conserved_and_the_pool_drains_under_preemption():
    # 0.212 × 80 GiB on an A100: 4,112 KV tokens for 40 requests of up to 1,900 tokens → preemption
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB", "gpu_memory_utilization": 0.212,
                        "max_model_len": 2048})
    log = Log(env)
    rng = random.Random(3)
    reqs = [req(i, rng.randint(200, 900), rng.randint(100, 900)) for i in range(40)]
    for r in reqs:
        s.submit(r, log)
    env.run()
    assert s.stats["preemptions"] > 0
    assert all(v[0] == 200 for v in log.rows.values()) and len(log.rows) == 40
    assert s.sampled_tokens == sum(r.output_tokens for r in reqs)
    assert s.prefill_tokens >= sum(r.input_tokens for r in reqs)  # recomputation adds, nothing is lost
    assert s.kv_used() == 0 and s.n_dec == 0 and not s.running and not s.waiting and s.in_flight == 0


def test_v1_and_v0_agree_at_low_load_with_ample_memory():
    out = {}
    for sched in ("v0", "v1"):
        env, pod, s = make({"model": "llama-3-8b", "gpu": "H100-80GB", "scheduler": sched})
        log = Log(env)
        _load(s, env, log, 300, 0.5, (100, 1000), (50, 300))
        env.run()
        ttft = sum(v[1] for v in log.rows.values()) / len(log.rows)
        e2e = sum(v[2] for v in log.rows.values())
        out[sched] = (ttft, e2e, len(log.rows))
        if sched == "v1":
            assert s.stats["preemptions"] == 0
    assert out["v0"][2] == out["v1"][2] == 300
    # V1 lets an arrival wait for the decode step in flight (V0 here starts its prefill at once): at most
    # one decode step apart on average
    assert abs(out["v1"][0] - out["v0"][0]) < decode_step_time(LLAMA3, H100, 1, 1000)
    assert out["v1"][1] == pytest.approx(out["v0"][1], rel=0.01)


def test_v1_keeps_ttft_low_where_v0_saturates():
    # The comparison: H100, Llama-3-8B, 300 in / 150 out, 47.5 req/s on one pod.
    res = {}
    for sched in ("v0", "v1"):
        env, pod, s = make({"model": "llama-3-8b", "gpu": "H100-80GB", "scheduler": sched})
        log = Log(env)
        _load(s, env, log, 2000, 47.5, (300, 300), (150, 150))
        env.run()
        ttfts = sorted(v[1] for v in log.rows.values())
        res[sched] = ttfts[len(ttfts) // 2]
    assert res["v1"] < 0.2 and res["v0"] > 5 * res["v1"]


def test_arrivals_within_one_step_are_admitted_together():
    env, pod, s = make({"model": "llama-3-8b", "gpu": "H100-80GB"})
    log = Log(env)
    for i in range(8):
        s.submit(req(i, 500, 200), log)
    env.run()
    assert len({round(v[1], 12) for v in log.rows.values()}) == 2  # the first alone, then 7 in one step
    assert s.max_batch == 8 and s.stats["preemptions"] == 0


def test_running_first_a_long_prompt_is_chunked_beside_the_decoders():
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})  # budget 2048
    log = Log(env)
    s.submit(req(1, 100, 400), log)
    env.run(until=1.0)
    s.submit(req(2, 20000 - 1000, 10), log)  # ~9 chunked steps
    env.run()
    alone = prefill_time(LLAMA3, A100, 100) + sum(decode_step_time(LLAMA3, A100, 1, 100 + j) for j in range(1, 400))
    slowest_step = StepCost.of(LLAMA3, A100).time(2048, 20000, 2048 * 20000, True)
    assert alone < log.rows[1][2] < alone + 10 * slowest_step  # decoding went on during the long prefill
    assert log.rows[2][0] == 200


def test_prefix_cache_hits_shorten_the_prefill():
    times = {}
    for hit in (0.0, 0.75):
        env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB", "prefix_cache_hit_ratio": hit})
        log = Log(env)
        s.submit(req(1, 1600, 1), log)
        env.run()
        times[hit] = log.rows[1][1]
        assert s.prefill_tokens == (1600 if hit == 0 else 400)
    assert times[0.75] < times[0.0]


def test_cancel_and_crash_leave_no_state_behind():
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    rs = [req(i, 3000, 500) for i in range(5)]
    for r in rs:
        s.submit(r, log)
    env.run(until=0.5)
    s.cancel(rs[0])
    s.cancel(rs[4])
    env.run()
    assert set(log.rows) == {1, 2, 3} and s.in_flight == 0 and s.kv_used() == 0
    for r in rs:
        s.submit(r, log)
    env.run(until=env.now + 0.3)
    pod.crash("test")
    assert s.in_flight == 0 and s.kv_used() == 0 and all(log.rows[r.id][0] == 502 for r in rs)
    env.run()


def test_first_byte_is_known_once_the_prompt_is_done():
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    r = req(1, 1000, 500)
    s.submit(r, log)
    assert s.first_byte_at(r) is None
    env.run(until=1.0)
    assert s.first_byte_at(r) == pytest.approx(prefill_time(LLAMA3, A100, 1000))


def test_a_request_submitted_when_another_finishes_joins_the_next_plan_not_a_second_timeline():
    """The queue-proxy hands the engine its next request from inside `on_done`: that request waits for the
    plan after the step, and the engine keeps exactly one timeline (two would run its steps twice as fast)."""
    env, pod, s = make({"model": "llama-3-8b", "gpu": "A100-80GB"})
    queue = [req(i, 1, 1) for i in range(2, 40)]  # one-token answers: each finishes in the step that prefills it
    steps = []

    def next_one(r, status, ttfb):
        steps.append((env.now, s.steps))
        if queue:
            s.submit(queue.pop(0), next_one)  # closed loop: one request in flight at a time

    s.submit(req(1, 1, 1), next_one)
    while env.peek() < float("inf"):
        env.step()
        live = [e for _, _, _, e in env._queue if e.callbacks]  # a cancelled tick has none
        assert len(live) <= 1
    assert len(steps) == 39 and [k for _, k in steps] == list(range(1, 40))  # one step per request, in turn
    one_step = prefill_time(LLAMA3, A100, 1)
    assert steps[-1][0] == pytest.approx(39 * one_step, rel=1e-9)

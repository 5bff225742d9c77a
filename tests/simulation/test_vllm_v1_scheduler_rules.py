"""The V1 scheduler's rules (`simulation/gpu/vllm_v1_scheduler.py`, `vllm_v1.py`) at their boundaries, with
counts worked out by hand: recompute after preemption is the prompt plus the generated tokens, each running
request's last block counted half-full, no admission in a step that preempted, prefix-cache hits in whole blocks.

The KV pool is set to a few hundred tokens (`engine.cap`, what `spec.budget.kv_tokens` gives on a real GPU) so
preemption and admission happen at a step the test can compute; block size 16, so half a block is 8 tokens.
"""

import gpu_fakes
from gpu_fakes import Log, req

SERVER = {"model": "llama-3-8b", "gpu": "A100-80GB"}  # block_size 16, max_num_batched_tokens 2048


def engine(cap, **keys):
    env, pod, s = gpu_fakes.make("vllm", {**SERVER, **keys})
    assert s.block == 16
    s.cap = cap
    return env, s


def serve(cap, *requests):
    """(engine, log) after serving `requests` ((input, output) tokens, submitted in order at t = 0)."""
    env, s = engine(cap)
    log = Log(env)
    for i, (inp, out) in enumerate(requests, 1):
        s.submit(req(i, inp, out), log)
    env.run()
    return s, log


def test_a_preempted_request_recomputes_its_prompt_and_generated_tokens():
    # A (100 in, 60 out) prefills alone in step 1; B (100 in, 150 out), arriving during it, prefills in step 2
    # beside A's first decode (101 + 1 + 100 + 8 ≤ 300). Then both decode: A's context 102 + n and B's 101 + n
    # after n more steps. A step holds while 203 + 2n + 2 new tokens + 8 (one last block, half-full) ≤ 300,
    # so after n = 44 the pool is dry and B, the newest, is preempted with 45 tokens generated. It waits until
    # A is done (147 + 1 + 145 + 8 > 300), then recomputes its 100 prompt and 45 generated tokens in one
    # 145-token prefill.
    s, log = serve(300, (100, 60), (100, 150))
    assert s.stats["preemptions"] == 1
    assert s.prefill_tokens == 100 + 100 + (100 + 45)
    assert s.sampled_tokens == 60 + 150  # the 45 tokens B had are kept, not sampled again
    assert log.rows[1][0] == log.rows[2][0] == 200
    assert log.rows[2][2] > log.rows[1][2]
    assert s.kv_used() == 0 and not s.running and not s.waiting


def test_each_running_request_holds_half_a_block_more_at_admission():
    # A (100 in, 3 out) prefills alone in step 1; B (84 in, 1 out), arriving during it, is admitted in step 2
    # iff A's context 101 + A's decode token 1 + B's 84 + 8 (A's last block, half-full) ≤ pool: a pool of
    # 194 tokens takes B beside A, 193 makes B wait until A is done (step 3) and prefill in step 4.
    s, log = serve(194, (100, 3), (84, 1))
    assert s.max_batch == 2
    assert log.rows[2][2] < log.rows[1][2]  # B's one token came in step 2, before A's third

    s, log = serve(193, (100, 3), (84, 1))
    assert s.max_batch == 1
    assert log.rows[2][2] > log.rows[1][2]  # B ran only after A had finished
    assert log.rows[2][0] == 200 and s.stats["preemptions"] == 0


def test_no_request_is_admitted_in_a_step_that_preempted():
    # A step budget of 32 tokens chunks the prompts, so a preempted request's first recompute chunk (30
    # tokens: the budget less the 2 decodes) would fit back at once; V1 admits nobody in that step
    # (`Scheduler.schedule`: the waiting queue is skipped when `preempted_reqs` is not empty).
    env, s = engine(300, max_num_seqs=4, max_num_batched_tokens=32)
    log = Log(env)
    victims, admitted_while_preempting = [], []
    preempt, start = s._preempt, s._start

    def record_preempt():
        victim = preempt()
        victims.append(victim)
        return victim

    def check_start(*args):
        admitted_while_preempting.extend(v for v in victims if v in s.running)
        victims.clear()
        return start(*args)

    s._preempt, s._start = record_preempt, check_start
    s.submit(req(1, 100, 120), log)
    s.submit(req(2, 100, 120), log)
    env.run()
    assert s.stats["preemptions"] >= 1
    assert admitted_while_preempting == []
    assert [v[0] for v in log.rows.values()] == [200, 200]
    assert s.sampled_tokens == 240 and s.kv_used() == 0


def test_prefix_cache_hits_are_whole_blocks():
    # cached = ⌊prompt × ratio⌋ rounded down to whole blocks (vLLM's prefix cache stores full blocks only)
    cases = [(1000, 0.5, 16, 1000 - 496),  # 500 → 31 blocks = 496 cached
             (100, 0.3, 16, 100 - 16),  # 30 → 1 block
             (100, 0.3, 32, 100),  # 30 → no whole 32-token block
             (1600, 0.75, 16, 400)]  # 1,200 = 75 blocks exactly
    for inp, hit, block, computed in cases:
        env, pod, s = gpu_fakes.make("vllm", {**SERVER, "prefix_cache_hit_ratio": hit, "block_size": block})
        log = Log(env)
        s.submit(req(1, inp, 1), log)
        env.run()
        assert log.rows[1][0] == 200
        assert s.prefill_tokens == computed, (inp, hit, block)

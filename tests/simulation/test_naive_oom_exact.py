"""The naive server's decode OOM (`simulation/gpu/naive.py`, `generate: concurrent`, `oom: process`) lands on the
first step whose memory crosses the CUDA total, at the time of the prefills and that many decode rounds. The
closed form is worked out here
from the model's shape (KV bytes per token = 2 × layers × KV heads × head dim × dtype bytes), not read from the
server, so a KV size off by a few per cent moves the crash by hundreds of steps and fails the test."""

import pytest

from catalog import DEFAULT
from simulation.gpu.memory import DEFAULT_NAIVE_OVERHEAD_GIB
from simulation.gpu.roofline import decode_step_time, prefill_time
from gpu_fakes import Log, make, req


def test_decode_oom_is_on_the_first_step_over_capacity():
    m, g = DEFAULT.models["llama-2-7b"], DEFAULT.gpus["A10G"]
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "generate": "concurrent", "oom": "process"})
    log = Log(env)
    s.submit(req(1, 3000, 10_000), log)
    s.submit(req(2, 3000, 10_000), log)
    env.run()
    assert pod.crashes == ["CUDA out of memory"]
    assert log.rows[1][0] == log.rows[2][0] == 502

    kv = 2 * m.layers * m.kv_heads * m.head_dim * m.dtype_bytes  # fp16 Llama-2-7B: 0.5 MiB a token
    assert kv == 2 * 32 * 32 * 128 * 2
    base = m.weights_bytes + int(DEFAULT_NAIVE_OVERHEAD_GIB * 2**30)
    # The prompts are prefilled one at a time, each pass sampling its first token: both sequences then hold
    # 3,001 tokens and every decode step appends one token to each. Step n holds base + kv·(6002 + 2n) bytes;
    # the OOM is the first n for which that exceeds the CUDA total.
    n = next(n for n in range(1, 20_000) if base + kv * (6002 + 2 * n) > g.cuda_total_bytes)
    assert base + kv * (6002 + 2 * (n - 1)) <= g.cuda_total_bytes
    assert 2000 < n < 10_000  # both sequences still decoding
    # Time-sliced: a round is two single-sequence steps. One decode segment runs from the second prefill to the
    # OOM, its step time held at the segment's starting context (piecewise constant, documented in
    # `llm_engine.py`; stepping the context up each round would make this segment of some 5,000 rounds 7.7 % longer).
    expected = 2 * prefill_time(m, g, 3000) + n * 2 * decode_step_time(m, g, 1, 3001)
    assert env.now == pytest.approx(expected, rel=1e-12)
    assert s.stats["oom_events"] == 1 and s.stats["oom_crashes"] == 1

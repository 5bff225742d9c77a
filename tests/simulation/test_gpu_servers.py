"""The GPU model servers on their own (a fake pod): continuous batching timeline, KV-block queueing,
naive CUDA OOM (process / request), input caps, Triton dynamic batching."""

import pytest

from catalog import DEFAULT
from validation.fields import Section
from simulation.gpu.memory import naive_memory_bytes
from simulation.gpu.roofline import decode_step_time, prefill_time
from simulation.gpu.servers import NaiveServer, TritonServer, VllmServer
from simulation.server import get_server

from gpu_fakes import FakePod, Log, make, req


LLAMA3, A100 = DEFAULT.models["llama-3-8b"], DEFAULT.gpus["A100-80GB"]


def test_registry_knows_the_gpu_servers():
    assert isinstance(get_server("vllm"), type) and get_server("naive") is NaiveServer
    assert get_server("triton") is TritonServer


def test_vllm_single_request_ttft_and_e2e_follow_the_roofline():
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    s.submit(req(1, 1000, 101), log)
    env.run()
    status, ttfb, t_done = log.rows[1]
    assert status == 200
    assert ttfb == pytest.approx(prefill_time(LLAMA3, A100, [1000]))
    # 100 decode steps after the prefill's first token; step time frozen at the segment start (context 1001)
    assert t_done == pytest.approx(ttfb + 100 * decode_step_time(LLAMA3, A100, 1, 1001))
    assert s.in_flight == 0 and s.free_blocks == s.budget.num_blocks


def test_vllm_continuous_batching_reschedules_only_on_batch_changes():
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    for i in range(8):
        s.submit(req(i, 500, 200 + 100 * i), log)
    env.run()
    assert all(v[0] == 200 for v in log.rows.values()) and len(log.rows) == 8
    # one prefill pass for all 8, then one decode segment per completion: far fewer than 2,000+ token events
    assert len(s.batch_sizes) == 8
    assert [n for _, n in s.batch_sizes] == [8, 7, 6, 5, 4, 3, 2, 1]
    # the first arrival is prefilled alone at once; the seven that queued behind it share the next pass
    assert len({round(v[1], 9) for v in log.rows.values()}) == 2
    assert sorted(log.rows, key=lambda i: log.rows[i][2]) == list(range(8))


def test_vllm_arrival_mid_decode_preempts_the_segment_for_a_prefill():
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    s.submit(req(1, 100, 1000), log)
    env.run(until=2.0)
    s.submit(req(2, 100, 10), log)
    env.run()
    alone = prefill_time(LLAMA3, A100, [100]) + 999 * decode_step_time(LLAMA3, A100, 1, 101)
    assert log.rows[1][2] > alone  # slowed by the second's prefill and the bigger batch
    assert log.rows[2][1] == pytest.approx(prefill_time(LLAMA3, A100, [100]))


def test_vllm_queues_when_kv_blocks_run_out_and_never_ooms():
    # util 0.4 on an A100-80GB: room for a few thousand tokens only.
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "A100-80GB",
                                "gpu_memory_utilization": 0.24})
    cap = s.budget.kv_tokens
    assert 8192 <= cap < 3 * 8192
    log = Log(env)
    for i in range(6):
        s.submit(req(i, 4000, 4000), log)  # 8,000 tokens each → only floor(cap / 8000) at once
    env.run()
    assert all(v[0] == 200 for v in log.rows.values())
    assert max(n for _, n in s.batch_sizes) == s.max_batch == cap // 8000
    assert pod.crashes == [] and s.stats["oom_events"] == 0


def test_vllm_max_num_seqs_caps_the_batch():
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "A100-80GB", "max_num_seqs": 3})
    log = Log(env)
    for i in range(7):
        s.submit(req(i, 100, 50), log)
    env.run()
    assert len(log.rows) == 7 and max(n for _, n in s.batch_sizes) == 3


def test_vllm_refuses_to_start_and_rejects_over_max_model_len():
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "L4", "gpu_memory_utilization": 0.76})
    assert "max_model_len 8192" in s.startup_error()
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "L4", "max_model_len": 4096})
    assert s.startup_error() is None
    assert s.check(req(1, 4000, 97)) == 400 and s.check(req(2, 4000, 96)) is None


def test_input_caps_answer_400_and_are_counted():
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "max_input_tokens": 4096,
                                 "max_new_tokens": 1024})
    assert s.check(req(1, 4097, 10)) == 400
    assert s.check(req(2, 100, 1025)) == 400
    assert s.check(req(3, 4096, 1024)) is None
    assert s.stats["rejected_400"] == 2 and s.in_flight == 0


# A server that runs a generate() per request at once, loaded with eager attention (an L² score matrix per prompt).
CONCURRENT_EAGER = {"model": "llama-2-7b", "gpu": "A10G", "generate": "concurrent", "eager_attention": True}


def test_naive_prefill_oom_kills_the_process_and_fails_everything_in_flight():
    env, pod, s = make("naive", {**CONCURRENT_EAGER, "oom": "process"})
    log = Log(env)
    for i in range(3):
        s.submit(req(i, 2000, 300), log)  # three fit
    env.run(until=1.0)
    assert pod.crashes == [] and s.in_flight == 3
    s.submit(req(9, 4096, 10), log)  # its prefill needs > what is left
    env.run(until=60.0)
    assert pod.crashes == ["CUDA out of memory"]
    assert {v[0] for v in log.rows.values()} == {502} and len(log.rows) == 4
    assert s.stats["oom_crashes"] == 1 and s.in_flight == 0


def test_naive_oom_request_mode_fails_only_the_allocating_request():
    # the default: KServe's Python server answers the exception with 500 and serves on (kserve/errors.py)
    env, pod, s = make("naive", CONCURRENT_EAGER)
    assert s.spec.oom == "request"
    log = Log(env)
    for i in range(3):
        s.submit(req(i, 2000, 300), log)
    env.run(until=1.0)
    s.submit(req(9, 4096, 10), log)
    env.run()
    assert pod.crashes == []
    assert log.rows[9][0] == 500 and all(log.rows[i][0] == 200 for i in range(3))
    assert s.stats["oom_request_failures"] == 1


def test_naive_single_long_prompt_ooms_alone_but_capped_one_does_not():
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "oom": "request", "eager_attention": True})
    log = Log(env)
    s.submit(req(1, 6000, 10), log)
    s.submit(req(2, 4096, 1024), log)
    env.run()
    assert log.rows[1][0] == 500 and log.rows[2][0] == 200
    assert s.peak_bytes <= DEFAULT.gpus["A10G"].cuda_total_bytes


def test_naive_concurrency_adds_latency_not_throughput():
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "generate": "concurrent"})
    log = Log(env)
    s.submit(req(1, 100, 200), log)
    env.run()
    one = log.rows[1][2]
    env2, pod2, s2 = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "generate": "concurrent"})
    log2 = Log(env2)
    for i in range(4):
        s2.submit(req(i, 100, 200), log2)
    env2.run()
    assert max(v[2] for v in log2.rows.values()) > 3.5 * one


def test_unknown_model_and_gpu_are_input_problems():
    problems = []
    VllmServer.parse_spec(Section({"model": "llama-9", "gpu": "B200"}, "server", problems), None)
    text = " ".join(str(p) for p in problems)
    assert "server.model" in text and "server.gpu" in text
    problems = []
    NaiveServer.parse_spec(Section({"model": "resnet-50", "gpu": "A10G"}, "server", problems), None)
    assert any("vision model" in str(p) for p in problems)


def test_user_defined_model_and_instance_type():
    data = {"model": "tiny", "instance_type": "g5.xlarge",
            "catalog": {"models": {"tiny": {"params_b": 1.0, "layers": 16, "kv_heads": 4, "head_dim": 64,
                                            "max_context": 2048, "hidden_size": 2048, "vocab_size": 32000}}}}
    env, pod, s = make("vllm", data)
    assert s.model.name == "tiny" and s.gpu.name == "A10G"
    assert s.budget.bytes_per_token == 2 * 16 * 4 * 64 * 2


# -- triton ----------------------------------------------------------------------------------------------

def triton(**kw):
    return make("triton", {"model": "resnet-50", "gpu": "A10G", **kw})


def test_triton_sends_preferred_batches_at_once_and_waits_for_the_queue_delay_otherwise():
    env, pod, s = triton(max_batch_size=8, preferred_batch_size=[4, 8], max_queue_delay_microseconds=5000)
    log = Log(env)
    for i in range(5):
        s.submit(req(i, 224 * 224, 1), log)
    env.run()
    # 4 go at once (largest preferred ≤ 4 queued… the first submit found 1 only, and waited)
    assert s.batch_sizes[0] in (4, 5) and sum(s.batch_sizes) == 5
    env, pod, s = triton(max_batch_size=8, max_queue_delay_microseconds=2000)
    log = Log(env)
    s.submit(req(1, 224 * 224, 1), log)
    env.run()
    assert list(s.batch_sizes) == [1] and log.rows[1][1] >= 0.002


def test_triton_caps_batch_and_pixels():
    env, pod, s = triton(max_batch_size=4, preferred_batch_size=[1, 2, 4], max_pixels=1024 * 1024)
    assert s.check(req(1, 2048 * 2048, 1)) == 400 and s.stats["rejected_400"] == 1
    log = Log(env)
    for i in range(10):
        s.submit(req(i, 224 * 224, 1), log)
    env.run()
    assert max(s.batch_sizes) == s.max_batch <= 4 and len(log.rows) == 10 and {v[0] for v in log.rows.values()} == {200}


def test_triton_oom_on_a_huge_batch():
    env, pod, s = triton(max_batch_size=64, preferred_batch_size=[64], oom="process",
                         max_queue_delay_microseconds=100000)
    log = Log(env)
    for i in range(64):
        s.submit(req(i, 1024 * 1024, 1), log)  # 64 × 40 MiB × 20.9 ≈ 52 GiB of activation
    env.run()
    assert pod.crashes == ["CUDA out of memory"] and {v[0] for v in log.rows.values()} == {502}


def test_server_serves_again_after_a_crash_and_a_terminating_pod_still_loses_the_work():
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "oom": "process", "eager_attention": True})
    log = Log(env)
    s.submit(req(1, 8000, 10), log)  # OOMs alone → crash
    env.run()
    assert pod.crashes and log.rows[1][0] == 502
    s.submit(req(2, 100, 10), log)  # the restarted container is the same server object
    env.run()
    assert log.rows[2][0] == 200

    class DeafPod(FakePod):
        def crash(self, reason):
            self.crashes.append(reason)  # terminating pods ignore crash(): no fail_all

    env, _, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "eager_attention": True})
    s.pod = DeafPod()
    log = Log(env)
    s.submit(req(3, 8000, 10), log)
    env.run()
    assert log.rows[3][0] == 500 and s.in_flight == 0


def test_batch_logs_stay_bounded_on_long_runs():
    from simulation.gpu.server_common import BATCH_LOG

    env, pod, s = triton(max_batch_size=4, preferred_batch_size=[1, 2, 4])
    log = Log(env)
    for i in range(5 * BATCH_LOG):  # batches of 4 after the first
        s.submit(req(i, 224 * 224, 1), log)
    env.run()
    assert len(log.rows) == 5 * BATCH_LOG and len(s.batch_sizes) == BATCH_LOG and s.max_batch == 4
    env, pod, s = make("vllm", {"scheduler": "v0", "model": "llama-3-8b", "gpu": "A100-80GB"})
    log = Log(env)
    for i in range(2 * BATCH_LOG):
        env.run(until=0.05 * (i + 1))
        s.submit(req(i, 50, 2 + i % 7), log)
    env.run()
    assert len(log.rows) == 2 * BATCH_LOG and len(s.batch_sizes) == BATCH_LOG
    assert s.max_batch >= max(n for _, n in s.batch_sizes) >= 1


def test_naive_default_is_huggingfaceserver_one_generate_at_a_time_fifo():
    """KServe huggingfaceserver (`generative_model.py`: one `_process_requests` thread over `_request_queue`): four
    requests at once are served one after another — the k-th waits k whole requests for its first token — and one
    sequence is on the GPU at a time (old model: four time-shared generate() calls, first tokens within 0.4 s)."""
    m, g = DEFAULT.models["llama-3-8b"], DEFAULT.gpus["L40S"]
    env, pod, s = make("naive", {"model": "llama-3-8b", "gpu": "L40S"})
    assert s.spec.generate == "serial"
    log = Log(env)
    for i in range(4):
        s.submit(req(i, 1000, 200), log)
    env.run()
    one = prefill_time(m, g, 1000) + 199 * decode_step_time(m, g, 1, 1001)
    for k in range(4):
        status, ttfb, done = log.rows[k]
        assert status == 200
        assert ttfb == pytest.approx(k * one + prefill_time(m, g, 1000), rel=0.01)
        assert done == pytest.approx((k + 1) * one, rel=0.01)
    assert s.max_batch == 1


def test_naive_serial_holds_one_sequence_in_memory_where_concurrent_calls_oom():
    """Four 3,300 + 1,000-token requests on llama-2-7b / A10G: one at a time they fit (the peak is one sequence);
    four concurrent generate() calls outgrow the GPU."""
    m = DEFAULT.models["llama-2-7b"]
    work = [req(i, 3300, 1000) for i in range(4)]
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G"})
    log = Log(env)
    for r in work:
        s.submit(r, log)
    env.run()
    assert {v[0] for v in log.rows.values()} == {200} and s.stats["oom_events"] == 0
    assert naive_memory_bytes(m, [], [3300]) <= s.peak_bytes <= naive_memory_bytes(m, [4300])  # one sequence
    env, pod, s = make("naive", {"model": "llama-2-7b", "gpu": "A10G", "generate": "concurrent"})
    log = Log(env)
    for r in [req(i, 3300, 1000) for i in range(4)]:
        s.submit(r, log)
    env.run()
    assert s.stats["oom_events"] > 0 and 500 in {v[0] for v in log.rows.values()}


def test_naive_serial_generates_a_cancelled_request_all_the_same():
    """huggingfaceserver never drops a request whose client went away: it stays in `_request_queue` and its
    generate() runs to the end, so the request behind it waits for both. Concurrent servers drop it."""
    m, g = DEFAULT.models["llama-3-8b"], DEFAULT.gpus["L40S"]
    one = prefill_time(m, g, 1000) + 199 * decode_step_time(m, g, 1, 1001)
    for mode, waits in (("serial", 3), ("concurrent", 2)):
        env, pod, s = make("naive", {"model": "llama-3-8b", "gpu": "L40S", "generate": mode})
        log = Log(env)
        a, b, c = req(1, 1000, 200), req(2, 1000, 200), req(3, 1000, 200)
        for r in (a, b, c):
            s.submit(r, log)
        env.run(until=1.0)
        s.cancel(b)
        env.run()
        assert 2 not in log.rows and log.rows[3][0] == 200 and s.in_flight == 0
        if mode == "serial":
            assert log.rows[3][2] == pytest.approx(waits * one, rel=0.01)
        else:
            assert log.rows[3][2] < 2.5 * one  # a and c time-share the GPU


def test_naive_generate_mode_is_checked():
    from gpu_fakes import spec_of

    _, problems = spec_of("naive", {"model": "llama-2-7b", "gpu": "A10G", "generate": "threads"})
    assert any("server.generate" in str(p) and "concurrent" in str(p) for p in problems)

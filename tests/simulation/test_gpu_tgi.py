"""TGI: its router's answers (429 above --max-concurrent-requests, 422 for its token caps) in front of the
V1-style engine, and its launcher defaults."""

from simulation.gpu.tgi import TgiEngine

import gpu_fakes
from gpu_fakes import req


def make(data):
    env, _, server = gpu_fakes.make("tgi", data)
    return env, server


def test_launcher_defaults():
    env, s = make({"model": "llama-3-8b", "gpu": "L40S"})
    assert isinstance(s, TgiEngine) and s.kind == "tgi"
    spec = s.spec
    assert spec.max_concurrent_requests == 128 and spec.max_num_seqs == 128
    # v3.3.4's launcher: min(363 TFLOP/s / 15.03 GFLOP per token = 24,147, the 8,192-token context) (tgi_launcher.py)
    assert spec.max_input_tokens == 8191 and spec.max_num_batched_tokens == 8192 and spec.max_model_len == 8192


def test_overloaded_router_answers_429_and_frees_a_seat_when_one_finishes():
    env, s = make({"model": "llama-3-8b", "gpu": "L40S", "max_concurrent_requests": 2})
    done = {}
    for i in range(2):
        assert s.check(req(i, 100, 50)) is None
        s.submit(req(i, 100, 50), lambda r, st, t: done.setdefault(r.id, st))
    assert s.check(req(3, 100, 50)) == 429 and s.stats["rejected_429"] == 1
    env.run()
    assert done == {0: 200, 1: 200} and s.check(req(4, 100, 50)) is None


def test_token_caps_are_validation_errors_422_not_400():
    env, s = make({"model": "llama-3-8b", "gpu": "L40S", "max_input_tokens": 4096, "max_model_len": 5120})
    assert s.check(req(1, 4097, 10)) == 422  # --max-input-tokens
    assert s.check(req(2, 4096, 1025)) == 422  # --max-total-tokens
    assert s.check(req(3, 4096, 1024)) is None
    assert s.stats["rejected_422"] == 2 and s.stats["rejected_400"] == 0


def test_the_gate_counts_422_as_an_input_cap_not_a_served_error():
    from simulation.report_terms import served_errors
    report = {"requests": 10, "status_counts": {"200": 7, "422": 2, "429": 1}}
    assert served_errors(report) == 1


def test_kv_pool_is_what_the_warm_up_leaves_times_fraction_times_wiggle_room():
    """TGI v3.3.4 warmup: blocks = (free − (1 − cuda_memory_fraction × TGI_WIGGLE_ROOM) × total) // block, free
    measured after the warm-up pass over --max-batch-prefill-tokens: vLLM's budget at fraction × 0.90, with
    that pass (not vLLM's defaults) as the activation peak — one request of the whole budget when
    --max-input-tokens is not given (grpc_client.rs `warmup`). A --cuda-memory-fraction of 0.8 holds back
    1 − 0.72 of the GPU, not 1 − 0.8."""
    from simulation.gpu.memory import vllm_budget

    def budget(**given):
        spec = make({"model": "llama-3-8b", "gpu": "L40S", **given})[1].spec
        want = vllm_budget(spec.profile.gpu, spec.profile.model, gpu_memory_utilization=spec.gpu_memory_utilization
                           * spec.wiggle_room, max_model_len=spec.max_model_len, tp=1,
                           max_num_batched_tokens=spec.max_num_batched_tokens, max_num_seqs=1)
        return spec, want

    spec, want = budget()
    assert (spec.gpu_memory_utilization, spec.wiggle_room) == (1.0, 0.90)
    assert spec.budget == want and want.gpu_memory_utilization == 0.90
    assert want.activation_bytes > vllm_budget(spec.profile.gpu, spec.profile.model, max_model_len=8192,
                                               max_num_batched_tokens=2048).activation_bytes  # 8,192-token warm-up
    spec, want = budget(gpu_memory_utilization=0.8)
    assert spec.budget == want and want.gpu_memory_utilization == 0.8 * 0.90
    spec, want = budget(wiggle_room=0.95)  # TGI v3.0's default, or TGI_WIGGLE_ROOM set
    assert spec.budget.gpu_memory_utilization == 0.95

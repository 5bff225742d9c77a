"""Which all-reduce vLLM runs, and its latency prior: the custom all-reduce (10 µs on NVLink) at tp 2, 4, 6 or 8
on fully NVLink-connected GPUs or two PCIe GPUs, unless `--disable-custom-all-reduce`; NCCL otherwise (20 µs on
NVLink, the 2(tp − 1) × 4 µs ring on PCIe). vLLM: `custom_all_reduce.py` (`_SUPPORTED_WORLD_SIZES`, "not
supported on more than two PCIe-only GPUs"), `cuda_communicator.py: all_reduce` (custom, else PyNCCL)."""

from dataclasses import replace

import pytest

from catalog import DEFAULT
from simulation.gpu.roofline import (Efficiency, StepCost, allreduce_latency_s, prefill_time, tp_comm_coefficients,
                                     uses_custom_all_reduce)

import gpu_fakes

GPUS, MODELS = DEFAULT.gpus, DEFAULT.models
L70 = MODELS["llama-3-70b"]  # 80 layers, hidden 8192, bf16
H100, L40S = GPUS["H100-80GB"], GPUS["L40S"]
NCCL = Efficiency(custom_all_reduce=False)  # --disable-custom-all-reduce


def test_disable_custom_all_reduce_takes_the_nccl_latency_on_nvlink():
    for tp in (2, 4, 8):
        assert uses_custom_all_reduce(H100, tp) and not uses_custom_all_reduce(H100, tp, NCCL)
        assert allreduce_latency_s(H100, tp) == 10e-6
        assert allreduce_latency_s(H100, tp, NCCL) == 20e-6
    per_pass, per_token = tp_comm_coefficients(L70, H100, 4, NCCL)
    assert per_pass == pytest.approx(160 * 20e-6, rel=1e-12)
    assert per_token == tp_comm_coefficients(L70, H100, 4)[1]  # the bytes term does not depend on the algorithm
    assert StepCost.of(L70, H100, NCCL, 4).comm_per_step_s == pytest.approx(160 * 20e-6, rel=1e-12)
    assert prefill_time(L70, H100, 1000, eff=NCCL, tp=4) - prefill_time(L70, H100, 1000, tp=4) == pytest.approx(
        160 * 10e-6, rel=1e-9)


def test_world_sizes_the_custom_all_reduce_does_not_support_run_nccl():
    for tp in (3, 5, 7, 16):
        assert not uses_custom_all_reduce(H100, tp)
        assert allreduce_latency_s(H100, tp) == 20e-6


def test_pcie_priors_are_nccls_ring_with_or_without_the_flag():
    """More than two PCIe GPUs: vLLM disables its custom all-reduce itself; two: it may run it (peer-to-peer
    permitting), no measurement separates it from NCCL there, so the flag changes nothing on PCIe."""
    assert uses_custom_all_reduce(L40S, 2) and not uses_custom_all_reduce(L40S, 4)
    assert not uses_custom_all_reduce(L40S, 2, NCCL)
    for tp, expected in ((2, 8e-6), (4, 24e-6), (8, 56e-6)):
        assert allreduce_latency_s(L40S, tp) == allreduce_latency_s(L40S, tp, NCCL) == pytest.approx(expected)


def test_an_explicit_latency_wins_over_every_prior_and_tp1_pays_nothing():
    for gpu in (H100, L40S):
        for custom in (True, False):
            eff = Efficiency(allreduce_latency_s=3e-5, custom_all_reduce=custom)
            assert allreduce_latency_s(gpu, 4, eff) == 3e-5
            assert allreduce_latency_s(gpu, 1, eff) == 0.0
            assert tp_comm_coefficients(L70, gpu, 1, eff) == (0.0, 0.0)
    assert allreduce_latency_s(H100, 1, NCCL) == 0.0 and tp_comm_coefficients(L70, H100, 1, NCCL) == (0.0, 0.0)


def test_server_key_disable_custom_all_reduce():
    keys = {"model": "llama-3-70b", "instance_type": "p5.48xlarge", "tensor_parallel_size": 4}
    spec, problems = gpu_fakes.spec_of("vllm", keys)
    assert not problems and spec.eff.custom_all_reduce
    spec, problems = gpu_fakes.spec_of("vllm", {**keys, "disable_custom_all_reduce": True})
    assert not problems and spec.eff == replace(Efficiency(), custom_all_reduce=False)
    _, problems = gpu_fakes.spec_of("vllm", {**keys, "disable_custom_all_reduce": "yes"})
    text = "; ".join(str(p) for p in problems)
    assert "server.disable_custom_all_reduce: got 'yes'" in text and "expected true or false" in text


def test_a_served_prompt_pays_the_nccl_latency_with_the_flag():
    def ttfb(**extra):
        env, _, server = gpu_fakes.make("vllm", {"model": "llama-3-70b", "instance_type": "p5.48xlarge",
                                                "tensor_parallel_size": 4, **extra})
        log = gpu_fakes.Log(env)
        server.submit(gpu_fakes.req(1, 1000, 1), log)
        env.run()
        return log.rows[1][1]

    assert ttfb(disable_custom_all_reduce=True) - ttfb() == pytest.approx(160 * (20e-6 - 10e-6), rel=1e-6)


def test_tgi_all_reduces_over_nccl():
    """TGI has no custom all-reduce (its `utils/dist.py` runs a ProcessGroupNCCL): NCCL's NVLink prior."""
    keys = {"model": "llama-3-70b", "instance_type": "p5.48xlarge", "tensor_parallel_size": 4}
    tgi, problems = gpu_fakes.spec_of("tgi", keys)
    assert not problems and not tgi.eff.custom_all_reduce
    assert allreduce_latency_s(H100, 4, tgi.eff) == 20e-6
    vllm, _ = gpu_fakes.spec_of("vllm", keys)
    assert replace(tgi.eff, custom_all_reduce=True) == vllm.eff   # nothing else differs

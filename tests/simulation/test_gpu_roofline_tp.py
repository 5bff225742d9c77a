"""Tensor-parallel communication in the roofline: 2 × layers ring all-reduces per pass, each latency +
2(tp − 1)/tp × tokens × hidden × dtype bytes over the GPU's link; 0 at tp = 1; NVLink far cheaper than PCIe;
the engines (V1, V0, naive) pay it wherever they time a pass."""

from dataclasses import replace

import pytest

from catalog import DEFAULT
from simulation.gpu.roofline import (Efficiency, StepCost, calibrate_compute_efficiency,
                                     calibrate_memory_efficiency, decode_step_time, prefill_time, request_latency,
                                     tp_comm_time)

import gpu_fakes
from gpu_fakes import Log, req

GPUS, MODELS = DEFAULT.gpus, DEFAULT.models
L70, L8 = MODELS["llama-3-70b"], MODELS["llama-3-8b"]
L40S, H100 = GPUS["L40S"], GPUS["H100-80GB"]


def _serve_one(kind: str, prompt: int, output: int, **keys) -> tuple[float, float]:
    """(TTFB, done) of one request alone on Llama-3-70B over a g6e.12xlarge's 4 L40S (tensor-parallel 4)."""
    env, _, server = gpu_fakes.make(kind, {"model": "llama-3-70b", "instance_type": "g6e.12xlarge",
                                           "tensor_parallel_size": 4, **keys})
    log = Log(env)
    server.submit(req(1, prompt, output), log)
    env.run()
    _, ttfb, t_done = log.rows[1]
    return ttfb, t_done


def _l40s_tp4_comm(tokens: int) -> float:
    """Llama-3-70B (80 layers, hidden 8192, bf16) on 4 × L40S (PCIe Gen4 x16, 32 GB/s one way), by hand."""
    buffer = tokens * 8192 * 2  # one all-reduce's bytes
    per_gpu = 2 * 3 / 4 * buffer  # a ring moves 2(tp − 1)/tp of it over each GPU's link
    one = 6 * 4e-6 + per_gpu / (32e9 * 0.65)  # 2(tp − 1) hops of 4 µs + bytes at 65 % of the link
    return 2 * 80 * one  # after attention and after the MLP, every layer


def test_comm_term_closed_form_llama3_70b_on_4_l40s():
    assert tp_comm_time(L70, L40S, 2048, tp=4) == pytest.approx(_l40s_tp4_comm(2048), rel=1e-12)
    assert _l40s_tp4_comm(2048) == pytest.approx(0.391, abs=0.001)  # ~2.4 ms per 32 MiB all-reduce, 160 of them
    # a decode step of 32 sequences: 512 KiB all-reduces, latency and bytes comparable
    assert decode_step_time(L70, L40S, 32, 32 * 1024, tp=4) - decode_step_time(
        L70, L40S, 32, 32 * 1024, tp=4, eff=Efficiency(interconnect=1.0, allreduce_latency_s=0.0)) > 0.005


def test_ttft_of_a_2k_prompt_on_4_l40s_grows_by_the_all_reduce_share():
    """Compute-bound prefill (FLOPs / (4 × 362 TFLOP/s × 0.5)) + 10 ms overhead + the all-reduces: +94 %."""
    flops = 2 * 70.55e9 * 2048 + 2 * 80 * 8192 * 2048 * 2048
    without = flops / (4 * 362e12 * 0.5) + 0.010
    ttft = prefill_time(L70, L40S, 2048, tp=4)
    assert ttft == pytest.approx(without + _l40s_tp4_comm(2048), rel=1e-9)
    assert 1.85 < ttft / without < 2.0
    assert request_latency(L70, L40S, 2048, 100, tp=4)[0] == ttft


def test_tp1_adds_exactly_nothing():
    for gpu in GPUS.values():
        assert tp_comm_time(L8, gpu, 4096, tp=1) == 0.0
        cost = StepCost.of(L8, gpu)
        assert (cost.comm_per_step_s, cost.comm_per_token_s) == (0.0, 0.0)
    g = GPUS["A100-80GB"]
    eff = Efficiency(memory=0.5, compute=1.0, step_overhead_s=0.0)
    assert decode_step_time(L8, g, 4, 4096, eff=eff) == (L8.weights_bytes + 131_072 * 4096) / (2039e9 * 0.5)


def test_nvlink_pays_far_less_than_pcie():
    pcie_h100 = replace(H100, interconnect="pcie", interconnect_gbps=32.0)  # same GPU, PCIe Gen4 link
    for tokens in (1, 32, 2048):
        nv, pc = tp_comm_time(L70, H100, tokens, tp=4), tp_comm_time(L70, pcie_h100, tokens, tp=4)
        assert 0 < nv < pc / 2, tokens
    assert prefill_time(L70, pcie_h100, 2048, tp=4) - prefill_time(L70, H100, 2048, tp=4) > 0.3
    nv_share = tp_comm_time(L70, H100, 2048, tp=4) / prefill_time(L70, H100, 2048, tp=4)
    pcie_share = tp_comm_time(L70, L40S, 2048, tp=4) / prefill_time(L70, L40S, 2048, tp=4)
    assert nv_share < 0.15 and pcie_share > 0.45  # p5.48xlarge vs g6e.12xlarge, 2k-token prompt at tp 4
    # the catalog: p4d/p4de/p5/p5e carry NVLink GPUs, g5/g6/g6e PCIe ones
    for inst in DEFAULT.instances.values():
        gpu = DEFAULT.gpus[inst.gpu]
        assert gpu.interconnect == ("nvlink" if inst.name.startswith("p") else "pcie"), inst.name
    assert {g: GPUS[g].interconnect_gbps for g in GPUS} == {
        "A10G": 32.0, "L4": 32.0, "L40S": 32.0, "A100-40GB": 300, "A100-80GB": 300, "H100-80GB": 450,
        "H200-141GB": 450}


def test_latency_prior_nvlink_flat_pcie_ring_and_both_calibratable():
    one_token = 8192 * 2
    pcie = [tp_comm_time(L70, L40S, 0, tp=tp) / 160 for tp in (2, 4, 8)]
    assert pcie == pytest.approx([8e-6, 24e-6, 56e-6])
    assert [tp_comm_time(L70, H100, 0, tp=tp) / 160 for tp in (2, 4, 8)] == pytest.approx([10e-6] * 3)
    eff = Efficiency(interconnect=0.5, allreduce_latency_s=50e-6)
    expected = 160 * (50e-6 + 1.5 * one_token / (450e9 * 0.5))
    assert tp_comm_time(L70, H100, 1, tp=4, eff=eff) == pytest.approx(expected, rel=1e-12)


def test_step_cost_keeps_its_limits_with_tp():
    cost = StepCost.of(L70, L40S, tp=4)
    assert cost.comm_per_token_s == pytest.approx(160 * 1.5 * 8192 * 2 / (32e9 * 0.65), rel=1e-12)
    assert cost.comm_per_step_s == pytest.approx(160 * 24e-6, rel=1e-12)
    assert cost.time(2000, 2000, 2000 * 1000, True) == pytest.approx(prefill_time(L70, L40S, 2000, tp=4), rel=1e-12)
    assert cost.time(16, 16 * 900, 16 * 900, False) == pytest.approx(
        decode_step_time(L70, L40S, 16, 16 * 900, tp=4), rel=1e-12)


def test_calibration_round_trips_with_tp():
    eff_m = calibrate_memory_efficiency(L70, L40S, measured_itl_s=0.090, context_tokens=512, tp=4)
    assert decode_step_time(L70, L40S, 1, 512, eff=Efficiency(memory=eff_m), tp=4) == pytest.approx(0.090)
    eff_c = calibrate_compute_efficiency(L70, L40S, measured_prefill_s=1.0, input_tokens=2048, tp=4)
    assert prefill_time(L70, L40S, 2048, eff=Efficiency(compute=eff_c, memory=10.0), tp=4) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="tensor-parallel"):
        calibrate_compute_efficiency(L70, L40S, measured_prefill_s=0.3, input_tokens=2048, tp=4)


@pytest.mark.parametrize("scheduler", ["v1", "v0"])
def test_vllm_engines_pay_the_all_reduces_on_a_g6e_12xlarge(scheduler):
    ttft, _ = _serve_one("vllm", 2000, 1, scheduler=scheduler)
    assert ttft == pytest.approx(prefill_time(L70, L40S, 2000, tp=4), rel=1e-12)
    assert ttft - tp_comm_time(L70, L40S, 2000, tp=4) == pytest.approx(
        prefill_time(L70, L40S, 2000, tp=4, eff=Efficiency(interconnect=1e9, allreduce_latency_s=0.0)), rel=1e-6)


def test_v1_decode_steps_pay_the_all_reduces():
    ttfb, t_done = _serve_one("vllm", 1000, 101)
    tpot = sum(decode_step_time(L70, L40S, 1, 1000 + j, tp=4) for j in range(1, 101)) / 100
    assert (t_done - ttfb) / 100 == pytest.approx(tpot, rel=1e-9)
    assert tp_comm_time(L70, L40S, 1, tp=4) / tpot > 0.05  # ~4 ms of a ~75 ms step


def test_server_keys_calibrate_the_link():
    spec, problems = gpu_fakes.spec_of("vllm", {"model": "llama-3-70b", "instance_type": "p5.48xlarge",
                                                "tensor_parallel_size": 4, "interconnect_efficiency": 0.5,
                                                "allreduce_latency_s": 2e-5})
    assert not problems and (spec.eff.interconnect, spec.eff.allreduce_latency_s) == (0.5, 2e-5)
    for key, bad in [("interconnect_efficiency", 0), ("interconnect_efficiency", 1.5), ("allreduce_latency_s", -1)]:
        _, problems = gpu_fakes.spec_of("vllm", {"model": "llama-3-8b", "gpu": "H100-80GB", key: bad})
        assert problems and f"server.{key}" in str(problems[0]) and str(bad) in str(problems[0]), (key, problems)


def test_user_gpu_declares_its_link():
    spec, problems = gpu_fakes.spec_of("vllm", {
        "model": "llama-3-70b", "gpu": "X9", "tensor_parallel_size": 4,
        "catalog": {"gpus": {"X9": {"memory_gib": 96, "bandwidth_gbps": 4000, "bf16_tflops": 900,
                                    "interconnect": "nvlink", "interconnect_gbps": 900}}}})
    assert not problems
    assert (spec.profile.gpu.interconnect, spec.profile.gpu.interconnect_gbps) == ("nvlink", 900)
    spec, problems = gpu_fakes.spec_of("vllm", {
        "model": "llama-3-8b", "gpu": "X9",
        "catalog": {"gpus": {"X9": {"memory_gib": 96, "bandwidth_gbps": 4000, "bf16_tflops": 900}}}})
    assert not problems and spec.profile.gpu.link == ("pcie", 32.0)
    # overriding a built-in GPU by name without stating the link keeps it (an H100 stays on NVLink)
    spec, problems = gpu_fakes.spec_of("vllm", {
        "model": "llama-3-8b", "gpu": "H100-80GB",
        "catalog": {"gpus": {"H100-80GB": {"memory_gib": 80, "bandwidth_gbps": 3350, "bf16_tflops": 989}}}})
    assert not problems and spec.profile.gpu.memory_gib == 80 and spec.profile.gpu.link == ("nvlink", 450)
    fat = DEFAULT.extended(gpus=[replace(H100, memory_gib=96.0, interconnect="", interconnect_gbps=0.0)])
    assert fat.gpus["H100-80GB"].link == ("nvlink", 450)
    _, problems = gpu_fakes.spec_of("vllm", {
        "model": "llama-3-8b", "gpu": "X9",
        "catalog": {"gpus": {"X9": {"memory_gib": 96, "bandwidth_gbps": 4000, "bf16_tflops": 900,
                                    "interconnect": "nvlink"}}}})
    assert "server.catalog.gpus.X9.interconnect_gbps" in str(problems)
    _, problems = gpu_fakes.spec_of("vllm", {
        "model": "llama-3-8b", "gpu": "X9",
        "catalog": {"gpus": {"X9": {"memory_gib": 96, "bandwidth_gbps": 4000, "bf16_tflops": 900,
                                    "interconnect": "infiniband"}}}})
    text = str(problems)
    assert "server.catalog.gpus.X9.interconnect" in text and "infiniband" in text and "'nvlink'" in text


def test_bench_fit_takes_the_all_reduces_off_before_fitting():
    """`calibrate bench --tp 4`: a run made by the roofline at tp 4 gives back its own factors (the fit would
    otherwise fold the communication into them and the simulation would count it twice)."""
    from simulation.calibrate.bench import BenchRun, fit_bench

    made = Efficiency(memory=0.55, compute=0.45, prefill_overhead_s=0.02)
    inputs, outputs = [1024, 1536, 2048, 3072, 4096], [200, 100, 300, 50, 400]
    run = BenchRun(inputs, outputs, [prefill_time(L70, L40S, n, eff=made, tp=4) for n in inputs],
                   [decode_step_time(L70, L40S, 1, i + o // 2, eff=made, tp=4) for i, o in zip(inputs, outputs)],
                   inputs, outputs, request_throughput=0.1, max_concurrency=1, request_rate="inf")
    fit = fit_bench(run, L70, L40S, tp=4)
    assert fit.efficiency.memory == pytest.approx(0.55, rel=1e-6)
    assert fit.efficiency.compute == pytest.approx(0.45, rel=1e-6)
    assert fit.efficiency.prefill_overhead_s == pytest.approx(0.02, abs=1e-6)
    assert fit.ttft_residual < 1e-6 and fit.tpot_residual < 1e-6


def test_naive_on_several_gpus_runs_the_layers_one_gpu_after_another():
    """huggingfaceserver's device_map="auto": split layers, one GPU busy at a time — one GPU's speed (not tp ×
    its bandwidth) and no all-reduces; the weights still split (memory per GPU)."""
    ttfb, t_done = _serve_one("naive", 2000, 11)
    assert ttfb == pytest.approx(prefill_time(L70, L40S, 2000), rel=1e-12)
    assert (t_done - ttfb) / 10 == pytest.approx(decode_step_time(L70, L40S, 1, 2001), rel=1e-4)
    assert ttfb > 3 * prefill_time(L70, L40S, 2000, tp=4, eff=Efficiency(interconnect=1e9, allreduce_latency_s=0))

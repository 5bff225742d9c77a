"""A stack configures the simulation's tensor-parallel communication model: `engineProfile` interconnectEfficiency /
allreduceLatencyS (vLLM, TGI), a `catalog.gpus` entry's interconnect / interconnectGbps, and vLLM's
`--disable-custom-all-reduce` in `runtime.args`; each reaches the simulated engine through the InferenceService and
scenario the gate builds (gate.scenario_for → simulation.load_scenario)."""

from __future__ import annotations

import pytest

import gpu_fakes
from gate import scenario_for
from simulation import load_scenario
from simulation.gpu.roofline import prefill_time, tp_comm_coefficients
from stackconfig.load import ROOT, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError


def _prod(instance_type: str = "g6e.12xlarge", *, gpus: int = 4, catalog: dict | None = None, **chat):
    """The prod stack with chat on `gpus` GPUs of one `instance_type` node (tensor parallelism = gpus)."""
    project, values = stack_config_values("prod")
    values = project_values(values, project)
    values["gpuNodeGroup"].update(instanceTypes=[instance_type], minSize=1, maxSize=4, desiredSize=1)
    if catalog is not None:
        values["catalog"] = catalog
    svc = values["services"][0]
    svc.update(resources={"gpus": gpus, "cpu": "16", "memory": "96Gi"}, minReplicas=1, maxReplicas=2, **chat)
    svc["annotations"].pop("autoscaling.knative.dev/initial-scale", None)
    return values, project


def _spec(values_project):
    cfg = parse_stack_config(values_project[0], values_project[1], "prod")
    return load_scenario(scenario_for(cfg, cfg.services[0]), base_dir=ROOT).server.spec


def _refused(values_project) -> str:
    with pytest.raises(InputError) as err:
        parse_stack_config(values_project[0], values_project[1], "prod")
    return str(err.value)


def _ttfb(spec, prompt: int = 1000) -> float:
    """One prompt alone on the engine the scenario builds."""
    import random

    import simpy
    from simulation.server import get_server

    env, pod = simpy.Environment(), gpu_fakes.FakePod()
    server = get_server("vllm")(env, pod, spec, random.Random(1))
    pod.server = server
    log = gpu_fakes.Log(env)
    server.submit(gpu_fakes.req(1, prompt, 1), log)
    env.run()
    return log.rows[1][1]


def test_engine_profile_sets_the_all_reduce_cost_of_a_tp4_service_on_g6e_12xlarge():
    prior = _spec(_prod())
    measured = _spec(_prod(engineProfile={"allreduceLatencyS": 5e-5, "interconnectEfficiency": 0.5}))
    assert prior.profile.tp == measured.profile.tp == 4 and prior.profile.gpu.name == "L40S"
    model, gpu = prior.profile.model, prior.profile.gpu  # llama-3-8b: 32 layers, hidden 4096, bf16
    ring_bytes = 2 * 3 / 4 * 4096 * 2
    assert tp_comm_coefficients(model, gpu, 4, prior.eff) == pytest.approx(
        (64 * 6 * 4e-6, 64 * ring_bytes / (32e9 * 0.65)), rel=1e-12)       # PCIe priors: 2(tp − 1) × 4 µs, 65 %
    assert tp_comm_coefficients(model, gpu, 4, measured.eff) == pytest.approx(
        (64 * 5e-5, 64 * ring_bytes / (32e9 * 0.5)), rel=1e-12)
    ttfb_prior, ttfb_measured = _ttfb(prior), _ttfb(measured)
    assert ttfb_prior == pytest.approx(prefill_time(model, gpu, 1000, eff=prior.eff, tp=4), rel=1e-12)
    assert ttfb_measured - ttfb_prior == pytest.approx(
        64 * (5e-5 - 24e-6) + 64 * 1000 * ring_bytes * (1 / (32e9 * 0.5) - 1 / (32e9 * 0.65)), rel=1e-9)
    # the same keys are TGI's (it runs tensor parallelism too)
    tgi = _spec(_prod(runtime={"engine": "tgi"}, engineProfile={"allreduceLatencyS": 5e-5}))
    assert tgi.profile.tp == 4 and tgi.eff.allreduce_latency_s == 5e-5


@pytest.mark.parametrize("engine", ["naive", "triton"])
def test_engines_without_all_reduces_refuse_the_keys(engine):
    runtime = {"engine": engine, "modelFormat": "triton" if engine == "triton" else "huggingface"}
    text = _refused(_prod(runtime=runtime, engineProfile={"allreduceLatencyS": 5e-5}))
    assert "services[0].engineProfile.allreduceLatencyS: got 5e-05" in text
    assert f"for engine {engine!r}" in text and "expected one of [" in text and "allreduceLatencyS'" not in text
    # where they apply, a misspelt key is answered with the right names
    text = _refused(_prod(engineProfile={"allreduceLatency": 5e-5}))
    assert "engineProfile.allreduceLatency: got 5e-05" in text and "for engine 'vllm'" in text
    assert "'allreduceLatencyS'" in text and "'interconnectEfficiency'" in text


@pytest.mark.parametrize("key, value, allowed", [
    ("allreduceLatencyS", 2, "expected a number between 0.0 and 1.0"),
    ("allreduceLatencyS", -1e-6, "expected a number between 0.0 and 1.0"),
    ("interconnectEfficiency", 0, "expected a number between 0.001 and 1.0"),
    ("interconnectEfficiency", 1.5, "expected a number between 0.001 and 1.0"),
    ("interconnectEfficiency", "high", "expected a number between 0.001 and 1.0"),
])
def test_engine_profile_tp_keys_out_of_range_are_refused(key, value, allowed):
    text = _refused(_prod(engineProfile={key: value}))
    assert f"services[0].engineProfile.{key}: got {value!r}" in text and allowed in text


X9 = {"memoryGib": 96, "bandwidthGbps": 4000, "bf16Tflops": 900}
X9_NODE = {"x9.8xl": {"gpu": "X9", "gpus": 8, "vcpus": 192, "memoryGib": 2048}}


def test_catalog_gpu_declares_its_link_and_the_simulation_prices_it():
    spec = _spec(_prod("x9.8xl", catalog={"gpus": {"X9": {**X9, "interconnect": "nvlink", "interconnectGbps": 900}},
                                          "instanceTypes": X9_NODE}))
    assert spec.profile.gpu.link == ("nvlink", 900) and spec.profile.tp == 4
    model = spec.profile.model
    assert tp_comm_coefficients(model, spec.profile.gpu, 4, spec.eff) == pytest.approx(
        (64 * 10e-6, 64 * 1.5 * 4096 * 2 / (900e9 * 0.80)), rel=1e-12)   # custom all-reduce, NVLink 80 %


def test_a_catalog_gpu_without_a_link_reaches_the_simulation_as_pcie():
    """Before, the gate handed the scenario interconnect '' and 0 GB/s, which its reader refuses."""
    spec = _spec(_prod("x9.8xl", catalog={"gpus": {"X9": X9}, "instanceTypes": X9_NODE}))
    assert spec.profile.gpu.link == ("pcie", 32.0) and spec.profile.gpu.memory_gib == 96


def test_catalog_override_of_a_built_in_keeps_or_replaces_its_link():
    def gpu_of(entry):
        values, project = _prod("p5.48xlarge", catalog={"gpus": {"H100-80GB": entry}})
        return parse_stack_config(values, project, "prod").catalog.gpus["H100-80GB"]

    base = {"memoryGib": 80, "bandwidthGbps": 3350, "bf16Tflops": 989}
    assert gpu_of(base).link == ("nvlink", 450)                               # kept
    assert gpu_of({**base, "interconnectGbps": 400}).link == ("nvlink", 400)  # kind kept, bandwidth replaced
    assert gpu_of({**base, "interconnect": "pcie"}).link == ("pcie", 32.0)
    spec = _spec(_prod("p5.48xlarge", catalog={"gpus": {"H100-80GB": {**base, "interconnectGbps": 400}}}))
    assert spec.profile.gpu.link == ("nvlink", 400)


@pytest.mark.parametrize("entry, key, allowed", [
    ({"interconnect": "infiniband", "interconnectGbps": 50}, "interconnect: got 'infiniband'",
     "expected one of 'nvlink', 'pcie'"),
    ({"interconnect": "nvlink"}, "interconnectGbps: got None", "required with interconnect: nvlink"),
    ({"interconnectGbps": 0}, "interconnectGbps: got 0", "expected a number between 0.1 and 100000"),
    ({"interconnectGbps": 1e308}, "interconnectGbps: got 1e+308", "expected a number between 0.1 and 100000"),
])
def test_catalog_gpu_link_refusals_name_key_value_and_allowed(entry, key, allowed):
    text = _refused(_prod(catalog={"gpus": {"X9": {**X9, **entry}}}))
    assert f"catalog.gpus.X9.{key}" in text and allowed in text


def test_disable_custom_all_reduce_in_runtime_args_reaches_the_simulation():
    """p5.48xlarge (8 × H100, NVSwitch): vLLM's custom all-reduce at tp 4 (10 µs), NCCL with the flag (20 µs)."""
    def spec(args, **chat):
        return _spec(_prod("p5.48xlarge", runtime={"engine": "vllm", "modelFormat": "huggingface", "args": args},
                           **chat))

    def per_pass(s):
        return tp_comm_coefficients(s.profile.model, s.profile.gpu, s.profile.tp, s.eff)[0]

    assert per_pass(spec([])) == pytest.approx(64 * 10e-6, rel=1e-12)
    off = spec(["--disable-custom-all-reduce"])
    assert not off.eff.custom_all_reduce and per_pass(off) == pytest.approx(64 * 20e-6, rel=1e-12)
    assert _ttfb(off) - _ttfb(spec([])) == pytest.approx(64 * 10e-6, rel=1e-6)
    # vLLM's own server reads `_` as `-`; KServe's huggingfaceserver (parse_known_args) drops that spelling: refused
    openai = _spec(_prod("p5.48xlarge", runtime={"engine": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                                  "args": ["--disable_custom_all_reduce"]}))
    assert not openai.eff.custom_all_reduce
    assert "expected --disable-custom-all-reduce: KServe's huggingfaceserver" in _refused(
        _prod("p5.48xlarge", runtime={"engine": "vllm", "args": ["--disable_custom_all_reduce"]}))
    assert spec(["--disable-custom-all-reduce", "--no-disable-custom-all-reduce"]).eff.custom_all_reduce
    explicit = spec(["--disable-custom-all-reduce"], engineProfile={"allreduceLatencyS": 3e-5})
    assert per_pass(explicit) == pytest.approx(64 * 3e-5, rel=1e-12)         # a measured latency wins
    one_gpu = _spec(_prod("p5.48xlarge", gpus=1, runtime={"engine": "vllm", "args": ["--disable-custom-all-reduce"]}))
    assert one_gpu.profile.tp == 1 and tp_comm_coefficients(
        one_gpu.profile.model, one_gpu.profile.gpu, 1, one_gpu.eff) == (0.0, 0.0)

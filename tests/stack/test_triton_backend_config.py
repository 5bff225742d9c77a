"""Triton's `--backend-config` settings and a named `--load-model` (simulation/engine_flags_triton.py; session 13:
both were refused whatever their value, although the python backend's settings change neither GPU memory nor
scheduling and a named model in explicit mode is the one model the simulation serves).

Sources: triton-inference-server/server `src/command_line_parser.cc` (`ParseBackendConfigOption`, the
`--load-model` help: '*' only alone); python_backend `src/python_be.cc` TRITONBACKEND_Initialize (the settings it
reads, their checks, shm-default-byte-size's minimum: 4 MiB to r23.08, 1 MiB from r23.09) and `src/shm_manager.cc`
(one /dev/shm region of that size per model instance); containerd's CRI sandbox `defaultShmSize` (64 MiB), the
/dev/shm of a pod that mounts nothing there.
"""

from __future__ import annotations

import copy

import pytest

import gate
from manifests.inference_service import inference_service
from runtime_stack import sim_spec, triton_refusal, triton_stack
from simulation import load_scenario
from simulation.triton_backend_config import POD_SHM_BYTES
from stackconfig.load import ROOT, load_stack
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

MIB = 1 << 20


# --- the python backend's settings ------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["--backend-config=python,shm-default-byte-size=16777216"],
    ["--backend-config", "python,shm-default-byte-size=67108864",
     "--backend-config=python,shm-growth-byte-size=1048576"],
    ["--backend-config=python,stub-timeout-seconds=120", "--backend-config=python,thread-pool-size=4",
     "--backend-config=python,shm-region-prefix-name=vision_a", "--backend-config=python,shm_message_queue_size=500"],
], ids=["shm-16MiB", "shm-whole-dev-shm-and-growth", "stub-and-threads"])
def test_the_python_backends_settings_are_accepted(args):
    assert sim_spec(triton_stack(args)).max_batch_size == 8


def test_a_region_larger_than_the_pods_dev_shm_is_refused_naming_it():
    text = triton_refusal(["--backend-config=python,shm-default-byte-size=134217728"],
                    "--backend-config=python,shm-default-byte-size=134217728",
                    "expected an integer from 1048576 (1 MiB) to 67108864 (64 MiB) for python's shm-default-byte-size")
    assert "64 MiB /dev/shm" in text and "Unable to initialize shared memory key" in text
    sim_spec(triton_stack([f"--backend-config=python,shm-default-byte-size={POD_SHM_BYTES}"]))      # exactly fits


def test_the_stacks_triton_pod_mounts_nothing_at_dev_shm():
    """The 64 MiB above holds only while the rendered pod mounts no memory emptyDir at /dev/shm."""
    stack = parse_stack_config(triton_stack([]), "p", "dev")
    predictor = inference_service(stack, stack.services[0])["spec"]["predictor"]
    assert "volumes" not in predictor and "volumeMounts" not in predictor["model"]


def test_the_backends_minimum_region_depends_on_the_release():
    """4 MiB up to python_backend r23.08 (KServe's 23.05 image without runtime.image), 1 MiB from r23.09."""
    arg = f"--backend-config=python,shm-default-byte-size={2 * MIB}"
    sim_spec(triton_stack([arg]))
    triton_refusal([arg], arg, "expected an integer from 4194304 (4 MiB)", image=None)
    triton_refusal([arg], arg, "its minimum is 4 MiB up to Triton 23.08; the pod runs 23.08",
             image="nvcr.io/nvidia/tritonserver:23.08-py3")
    sim_spec(triton_stack([arg], image="nvcr.io/nvidia/tritonserver:23.09-py3"))
    triton_refusal([f"--backend-config=python,shm-default-byte-size={MIB // 2}"],
             f"--backend-config=python,shm-default-byte-size={MIB // 2}", "the python backend refuses it")


@pytest.mark.parametrize("arg, why", [
    ("--backend-config=python,shm-default-byte-size=16MB", "shm-default-byte-size (std::stol reads '16MB' as 16)"),
    ("--backend-config=python,shm-growth-byte-size=0", "expected an integer of at least 1 for python's "
                                                       "shm-growth-byte-size"),
    ("--backend-config=python,stub-timeout-seconds=-5", "the python backend refuses it"),
    ("--backend-config=python,shm-region-prefix-name=a/b", "it names the /dev/shm regions"),
    ("--backend-config=python,shm-default-size=16777216", "the python backend reads no such setting"),
], ids=["shm-units", "growth-zero", "timeout-negative", "prefix-slash", "unknown-setting"])
def test_a_python_setting_the_backend_refuses_or_ignores_is_refused(arg, why):
    triton_refusal([arg], arg, why)


# --- other backends' settings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("arg, why", [
    ("--backend-config=default-max-batch-size=16", "the max_batch_size Triton's auto-complete gives a model"),
    ("--backend-config=tensorflow,gpu-memory-fraction=0.5", "cannot tell whether tensorflow's gpu-memory-fraction "
                                                            "changes GPU memory or batching"),
    ("--backend-config=onnxruntime,enable-global-threadpool=1", "the stack checks the python backend's settings"),
], ids=["default-max-batch-size", "tensorflow-memory", "onnxruntime"])
def test_another_backends_setting_is_refused_saying_why(arg, why):
    text = triton_refusal([arg], arg, why)
    assert "does not model" in text


@pytest.mark.parametrize("arg", ["--backend-config=python", "--backend-config=,shm-default-byte-size=1",
                                 "--backend-config=python,shm-default-byte-size=", "--backend-config=a=1,b"])
def test_a_setting_triton_cannot_parse_is_refused(arg):
    triton_refusal([arg], arg, "expected [<backend>,]<setting>=<value> (ParseBackendConfigOption) for --backend-config")


# --- a named --load-model ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["--model-control-mode=explicit", "--load-model=resnet50_onnx"],
                                  ["--model-control-mode=EXPLICIT", "--load-model", "resnet", "--load-model=resnet"]],
                         ids=["named", "named-twice"])
def test_one_named_model_in_explicit_mode_is_accepted(args):
    assert sim_spec(triton_stack(args)).max_batch_size == 8


@pytest.mark.parametrize("args, shown, why", [
    (["--model-control-mode=explicit", "--load-model=resnet", "--load-model=vit"], "--load-model=vit",
     "expected one model, 'resnet': Triton loads every model --load-model names onto the GPU ('resnet', 'vit')"),
    (["--model-control-mode=explicit", "--load-model=resnet", "--load-model=*"], "--load-model=resnet",
     "expected --load-model=* alone, or named models without it"),
    (["--model-control-mode=explicit", "--load-model="], "--load-model=", "an empty name is no model"),
    (["--load-model=resnet"], "--load-model=resnet", "expected --model-control-mode=explicit with it"),
], ids=["two-models", "star-and-name", "empty", "without-explicit"])
def test_what_loads_another_set_of_models_is_still_refused(args, shown, why):
    triton_refusal(args, shown, why)


def test_a_scenarios_own_triton_manifest_takes_a_named_model_and_a_python_setting():
    stack = load_stack("staging")
    scenario = copy.deepcopy(gate.scenario_for(stack, next(s for s in stack.services if s.name == "vision")))
    container = scenario["inferenceService"]["spec"]["predictor"]["model"]
    container.setdefault("args", []).extend(["--model-control-mode=explicit", "--load-model=vision",
                                             "--backend-config=python,shm-default-byte-size=8388608"])
    assert load_scenario(copy.deepcopy(scenario), base_dir=ROOT).server.kind == "triton"
    container["args"].append("--backend-config=python,shm-default-byte-size=268435456")
    with pytest.raises(InputError) as err:
        load_scenario(scenario, base_dir=ROOT)
    assert [p.value for p in err.value.problems if p.path == "inferenceService.spec.predictor.model.args"] == \
        ["--backend-config=python,shm-default-byte-size=268435456"]

"""A scenario's own manifest is held to what its server reads, as a stack is at load: flags the server refuses or the
simulation does not model, engine settings in the environment and tensor parallelism that is not the pod's GPU
count are problems naming the container's args or env, not silently simulated as the defaults they replace."""

from __future__ import annotations

import copy

import pytest

import gate
from simulation import load_scenario
from stackconfig.load import ROOT, load_stack
from validation.errors import InputError


def _prod_chat() -> dict:
    cfg = load_stack("prod")
    return gate.scenario_for(cfg, next(s for s in cfg.services if s.name == "chat"))


def _container(scenario: dict) -> dict:
    return scenario["inferenceService"]["spec"]["predictor"]["model"]


def _problems(scenario: dict) -> list:
    with pytest.raises(InputError) as err:
        load_scenario(scenario, base_dir=ROOT)
    return err.value.problems


def test_the_stacks_own_manifest_loads():
    assert load_scenario(_prod_chat(), base_dir=ROOT).server.kind == "vllm"


@pytest.mark.parametrize("arg, why", [
    ("--dtype=float32", "expected auto, half, float16 or bfloat16 (2 bytes"),
    ("--disable-custom-all-reduce=false", "a switch takes no value"),
    ("--tensor-parallel-size=2", "expected 1 (resources.gpus)"),
    ("--max_num_seqs=8", "expected --max-num-seqs"),     # huggingfaceserver's parse_known_args drops it
])
def test_an_arg_the_server_refuses_or_the_simulation_ignores_is_a_problem(arg, why):
    scenario = _prod_chat()
    _container(scenario).setdefault("args", []).append(arg)
    problems = _problems(scenario)
    assert [p for p in problems if p.path == "inferenceService.spec.predictor.model.args" and p.value == arg
            and why in p.allowed], [(p.path, p.value, p.allowed[:80]) for p in problems]


def test_an_engine_setting_in_the_environment_is_a_problem_naming_the_variable():
    scenario = _prod_chat()
    _container(scenario).setdefault("env", []).append({"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"})
    problems = _problems(scenario)
    assert [p.path for p in problems] == ["inferenceService.spec.predictor.model.env[VLLM_ALLOW_LONG_MAX_MODEL_LEN]"]


def test_a_scenario_that_names_another_server_does_not_read_the_manifests_args():
    scenario = copy.deepcopy(_prod_chat())
    _container(scenario).setdefault("args", []).append("--dtype=float32")
    scenario["server"] = {"kind": "simple", "base_s": 0.5}
    assert load_scenario(scenario, base_dir=ROOT).server.kind == "simple"

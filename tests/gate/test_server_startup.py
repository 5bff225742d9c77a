"""A vLLM or TGI server that would exit at start-up on its GPUs (one max_model_len request's KV cache does not fit)
is refused when the stack loads, gate on or off, at the key to change (gate/startup.py), with the simulation's own
start-up plan: review 12 (journey, F1) found Qwen2.5-72B on 4 × A100-40GB passing the load checks, every simulated
pod crash-looping, and the advice proposing maxReplicas."""

from __future__ import annotations

import pulumi
import pytest

from gate.startup import check_servers_start, start_problems
from offline import run_program
from runtime_stack import chat_stack, with_service
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"
QWEN_72B = {"name": "qwen2.5-72b", "storageUri": "hf://Qwen/Qwen2.5-72B-Instruct", "public": True}


def _qwen(engine: str = "vllm", input_tokens: int = 8192, gpus: int = 4, **service) -> object:
    base = chat_stack()
    base["gpuNodeGroup"] = {"instanceTypes": ["p4d.24xlarge"]}            # 8 × A100 40 GB
    values = with_service(base, {"engine": engine, "modelFormat": "huggingface"}, model=QWEN_72B,
                          resources={"gpus": gpus, "cpu": "40", "memory": "400Gi"},
                          limits={"maxInputTokens": input_tokens, "maxNewTokens": 1024, "maxBatchSize": 64}, **service)
    return parse_stack_config(values, "p", "dev")


def test_a_context_whose_kv_cache_does_not_fit_is_refused_at_the_limits():
    cfg = _qwen()
    [problem] = start_problems(cfg)
    assert problem.path == "services[0].limits" and problem.value == {"maxInputTokens": 8192, "maxNewTokens": 1024}
    assert "max_model_len 9216 needs" in problem.allowed and "only" in problem.allowed
    assert "Lower limits.maxInputTokens + maxNewTokens" in problem.allowed
    with pytest.raises(InputError) as err:
        check_servers_start(cfg)
    assert err.value.problems[0].path == "p:services[0].limits"


def test_a_context_that_fits_starts_and_more_gpus_make_room():
    assert start_problems(_qwen(input_tokens=1024)) == []
    assert start_problems(_qwen(gpus=8)) == []


def test_weights_that_leave_no_room_are_refused_at_the_gpu_count():
    """33.9 GiB of weights per GPU fit 0.88 × 40 GiB (the load-time check), not with the profiling pass and the CUDA
    context beside them in 0.88 × the 39.4 GiB CUDA reports."""
    [problem] = start_problems(_qwen(input_tokens=1024, gpuMemoryUtilization=0.88))
    assert problem.path == "services[0].resources.gpus" and problem.value == 4
    assert "weights 33.86 GiB + activation" in problem.allowed and "raise gpuMemoryUtilization" in problem.allowed


def test_tgi_is_held_to_its_own_start_up_plan():
    [problem] = start_problems(_qwen(engine="tgi"))
    assert problem.path == "services[0].limits" and "tgi on 4 GPU(s)" in problem.allowed   # its KV pool is too small
    assert "raise gpuMemoryUtilization" not in problem.allowed      # a vLLM setting
    assert start_problems(_qwen(engine="tgi", gpus=8, input_tokens=1024)) == []


def test_the_shipped_stacks_start():
    from stackconfig.load import load_stack

    for stack in ("dev", "staging", "prod"):
        assert start_problems(load_stack(stack)) == [], stack


def test_the_program_refuses_before_any_resource_with_the_gate_off(registered):
    def edit(c):
        c[f"{P}:gpuNodeGroup"].update(instanceTypes=["p4d.24xlarge"])
        c[f"{P}:modelCache"]["sizeGib"] = 400
        svc = c[f"{P}:services"][0]
        svc.update(model={**QWEN_72B, "public": True}, resources={"gpus": 4, "cpu": "40", "memory": "400Gi"},
                   limits={"maxInputTokens": 8192, "maxNewTokens": 1024, "maxBatchSize": 64})
        c[f"{P}:gate"] = {"enabled": False}

    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=edit)
    assert f"{P}:services[0].limits" in str(err.value) and "would exit at start-up" in str(err.value)
    assert registered == []


def test_preflight_check_refuses_it_with_the_loaders_exit(monkeypatch):
    import preflight.check as cli

    monkeypatch.setattr(cli, "load_stack", lambda stack, *a, **k: _qwen())
    with pytest.raises(InputError) as err:
        cli.check("dev", executor=None)
    assert [p.path for p in err.value.problems] == ["p:services[0].limits"]


def test_server_settings_the_simulation_refuses_are_refused_at_load_with_the_gate_off():
    """Review 12 (fuzz), F2: `--max-num-seqs=10000` leaves vLLM's 2,048-token step budget below its max_num_seqs,
    which vLLM refuses at start-up; the gate's scenario reader refuses it, but with the gate off nothing did."""
    values = with_service(chat_stack(), {"engine": "vllm", "args": ["--max-num-seqs=10000"]},
                          gate={"enabled": False})
    values["gate"] = values["services"][0].pop("gate")
    cfg = parse_stack_config(values, "p", "dev")
    [problem] = start_problems(cfg)
    assert (problem.path, problem.value) == ("services[0].runtime.args", "--max-num-seqs=10000")
    assert "max_num_batched_tokens is 2048" in problem.allowed and "max_num_seqs (10000)" in problem.allowed
    fits = with_service(chat_stack(), {"engine": "vllm", "args": ["--max-num-seqs=64"]})
    assert start_problems(parse_stack_config(fits, "p", "dev")) == []


@pytest.mark.parametrize("drop", ["layers", "kvHeads", "headDim", "maxContext"])
def test_a_catalog_llm_without_its_kv_shape_is_refused_at_its_key(drop):
    """Review 12 (fuzz), F2/F5: an llm catalog entry without layers, kvHeads, headDim or maxContext passed the stack
    loader (the gate's reader then named `layers` whatever was missing)."""
    entry = {"paramsB": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128, "maxContext": 8192, "hiddenSize": 4096,
             "vocabSize": 128256, "intermediateSize": 14336, "numHeads": 32}
    values = chat_stack(model={"name": "mymodel", "storageUri": "hf://m/l", "public": True})
    gone = {drop, "numHeads"} if drop == "headDim" else {drop}   # headDim is derived from hiddenSize / numHeads
    values["catalog"] = {"models": {"mymodel": {k: v for k, v in entry.items() if k not in gone}}}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, "p", "dev")
    assert [p.path for p in err.value.problems] == [f"p:catalog.models.mymodel.{drop}"]
    values["catalog"] = {"models": {"mymodel": entry}}
    assert parse_stack_config(values, "p", "dev").services[0].model.kv_heads == 8


def test_the_scenario_reader_names_the_missing_kv_shape_field():
    import gpu_fakes

    entry = {"kind": "llm", "params_b": 8.0, "layers": 32, "kv_heads": 8, "max_context": 8192}
    _, problems = gpu_fakes.spec_of("vllm", {"model": "mine", "gpu": "L40S", "catalog": {"models": {"mine": entry}}})
    assert problems[0].path == "server.catalog.models.mine.head_dim" and problems[0].value is None


@pytest.mark.parametrize("args, limits, key, value, says", [
    (["--max-model-len=65536"], None, "services[0].runtime.args", "--max-model-len=65536",
     "Lower the context it gives"),
    ([], None, "services[0].limits", None, "below the model's own context, 131,072 tokens"),
])
def test_the_context_refusal_names_the_key_that_set_the_context(args, limits, key, value, says):
    """Review 12 (realistic configs), F3: a context from runtime.args, or the model's own when nothing sets one,
    was reported at `limits` with {maxInputTokens: None, …}, whose fix the loader then refuses as a flag given
    twice."""
    base = chat_stack()
    base["gpuNodeGroup"] = {"instanceTypes": ["g5.2xlarge"]}                 # one A10G, 24 GB
    values = with_service(base, {"engine": "vllm", "args": args}, resources={"gpus": 1, "cpu": "3", "memory": "24Gi"},
                          model={"name": "llama-3.1-8b", "storageUri": "hf://m/l", "public": True})
    [problem] = start_problems(parse_stack_config(values, "p", "dev"))
    assert (problem.path, problem.value) == (key, value) and says in problem.allowed


def test_a_catalog_llm_copied_from_a_config_json_without_head_dim_derives_it():
    """Review 12 (realistic configs), F5: Llama's and Qwen2's config.json give hidden_size and num_attention_heads,
    not head_dim (transformers computes hidden_size // num_attention_heads)."""
    entry = {"paramsB": 8.03, "layers": 32, "kvHeads": 8, "maxContext": 8192, "hiddenSize": 4096, "vocabSize": 128256,
             "intermediateSize": 14336, "numHeads": 32}
    values = chat_stack(model={"name": "mymodel", "storageUri": "hf://m/l", "public": True})
    values["catalog"] = {"models": {"mymodel": entry}}
    assert parse_stack_config(values, "p", "dev").services[0].model.head_dim == 128
    values["catalog"] = {"models": {"mymodel": {k: v for k, v in entry.items() if k != "numHeads"}}}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, "p", "dev")
    assert [p.path for p in err.value.problems] == ["p:catalog.models.mymodel.headDim"]

"""vLLM flags common in KServe and vLLM manifests (session 13): neutral ones accepted with argparse's choices,
ones that change what the simulation models refused with their reason, version-bound ones by the image's vLLM;
a flag the stack renders too refused at load (TGI: any repeat; argparse: a different value); a scenario manifest's
--block-size reported once.

Sources: docs.vllm.ai v0.8.5 serving/engine_args (--task, --load-format, --guided-decoding-backend choices),
v0.10.1 and v0.11.0 configuration/engine_args and config/structured_outputs (vllm#22772 removed
--guided-decoding-* for --structured-outputs-config in 0.11); text-generation-inference v3.3.4 launcher (clap).
"""

from __future__ import annotations

import copy

import pytest

from gate import scenario_for
from manifests.admission import check_pods_can_run
from runtime_stack import chat_stack, refused
from simulation import load_scenario
from simulation.engine_flags import VLLM_OPENAI, read_args
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

OPENAI = "vllm/vllm-openai:v0.11.0"


def _cfg(runtime: dict, limits: dict | None = None) -> dict:
    cfg = copy.deepcopy(chat_stack())
    cfg["services"][0]["runtime"] = runtime
    if limits is not None:
        cfg["services"][0]["limits"] = limits
    return cfg


@pytest.mark.parametrize("image", [None, OPENAI])
@pytest.mark.parametrize("args", [["--load-format", "safetensors"], ["--load-format=auto"], ["--task", "generate"],
                                  ["--task=auto"], ["--scheduling-policy=fcfs"], ["--pipeline-parallel-size", "1"],
                                  ["--max-num-partial-prefills=1"], ["--long-prefill-token-threshold=0"],
                                  ["--max-logprobs=5"]])
def test_neutral_vllm_flags_are_accepted(image, args):
    runtime = {"engine": "vllm", "args": args, **({"image": image} if image else {})}
    check_pods_can_run(parse_stack_config(_cfg(runtime), "p", "dev"))


@pytest.mark.parametrize("args, why", [
    (["--enforce-eager"], "without CUDA graphs"),
    (["--quantization", "awq"], "quantized weights take less GPU memory"),
    (["--enable-lora"], "LoRA reserves GPU memory"),
    (["--limit-mm-per-prompt", "image=2"], "multimodal inputs"),
    (["-pp", "2"], "pipeline stages are not modelled"),
    (["--disable-sliding-window"], "sliding window"),
    (["--compilation-config", '{"level": 3}'], "CUDA-graph capture"),
    (["-O3"], "it is --compilation-config"),
    (["--scheduling-policy=priority"], "priority orders the queue"),
    (["--long-prefill-token-threshold=512"], "caps long prompts' chunks"),
    (["--max-num-partial-prefills", "4"], "several partial prefills at once"),
    (["--pipeline-parallel-size=2"], "pipeline stages split the layers"),
    (["--load-format=bitsandbytes"], "quantize the weights in GPU memory"),
    (["--task", "embed"], "pooling or other runner"),
    (["--task=bogus"], "expected auto or generate"),
])
def test_vllm_flags_the_simulation_does_not_model_are_refused_with_their_reason(args, why):
    text = refused(_cfg({"engine": "vllm", "image": OPENAI, "args": args}))
    assert f"services[0].runtime.args: got '{' '.join(args)}'; expected" in text and why in text
    assert "changes neither GPU memory nor scheduling" not in text     # not the generic unknown-flag answer


@pytest.mark.parametrize("image, arg, ok", [
    ("vllm/vllm-openai:v0.10.1", "--guided-decoding-backend=xgrammar", True),
    (OPENAI, "--guided-decoding-backend=xgrammar", False),           # removed in 0.11 (vllm#22772)
    ("vllm/vllm-openai:latest", "--guided-decoding-backend=xgrammar", False),   # no version: the newest assumed
    (None, "--guided-decoding-backend=outlines", True),              # KServe 0.15's huggingfaceserver: vLLM 0.8.5
    (OPENAI, "--structured-outputs-config.backend=xgrammar", True),
    ("vllm/vllm-openai:v0.10.1", "--structured-outputs-config.backend=xgrammar", False),
])
def test_guided_decoding_backend_by_the_images_vllm(image, arg, ok):
    cfg = _cfg({"engine": "vllm", "args": [arg], **({"image": image} if image else {})})
    if ok:
        parse_stack_config(cfg, "p", "dev")
    else:
        text = refused(cfg)
        assert f"got '{arg}'; expected no {arg.split('=')[0]}" in text and "argparse stops" in text


def test_a_bad_guided_decoding_backend_names_the_choices():
    text = refused(_cfg({"engine": "vllm", "args": ["--guided-decoding-backend", "fast"]}))
    assert "got '--guided-decoding-backend fast'; expected auto, xgrammar, guidance, outlines" in text


def test_an_attached_short_value_is_one_problem():
    problems = read_args(VLLM_OPENAI, ["-O3", "--max-num-seqs=8"], OPENAI).problems
    assert [arg for arg, _ in problems] == ["-O3"] and "it is --compilation-config" in problems[0][1]


# --- a flag the stack renders, given again in runtime.args: refused at load, with its value ---------------------
def test_tgi_refuses_any_repeat_of_a_rendered_flag_at_load():
    """TGI's clap stops at a repeated flag, even with the same value; the loader (not admission) says so."""
    with pytest.raises(InputError) as err:
        parse_stack_config(_cfg({"engine": "tgi", "args": ["--max-batch-size", "16"]}, {"maxBatchSize": 16}),
                           "p", "dev")
    text = str(err.value)
    assert "services[0].runtime.args: got '--max-batch-size 16'; expected no --max-batch-size: the stack " \
           "renders --max-batch-size=16 from limits.maxBatchSize" in text and "set limits.maxBatchSize" in text


def test_argparse_keeps_the_last_value_so_a_repeat_of_the_same_value_is_accepted():
    cfg = parse_stack_config(_cfg({"engine": "vllm", "args": ["--max-num-seqs", "16"]}, {"maxBatchSize": 16}),
                             "p", "dev")
    check_pods_can_run(cfg)
    text = refused(_cfg({"engine": "vllm", "args": ["--max-num-seqs", "4"]}, {"maxBatchSize": 16}))
    assert "got '--max-num-seqs 4'; expected --max-num-seqs=16 or no such flag" in text
    assert "would run with 4, not the 16" in text


def test_vllms_own_server_port_repeated_with_another_value_is_refused_at_load():
    text = refused(_cfg({"engine": "vllm", "image": OPENAI, "args": ["--port", "8000"]}))
    assert "got '--port 8000'; expected --port=8080 or no such flag" in text and "remove it" in text


# --- a scenario's own manifest: a --block-size vLLM does not start with, reported once ---------------------------
def test_a_scenario_manifests_block_size_is_reported_once():
    stack = parse_stack_config(_cfg({"engine": "vllm"}), "p", "dev")
    scenario = scenario_for(stack, stack.services[0])
    scenario["inferenceService"]["spec"]["predictor"]["model"]["args"] += ["--block-size=8"]
    with pytest.raises(InputError) as err:
        load_scenario(scenario)
    assert len(err.value.problems) == 1
    assert "args: got '--block-size=8'; expected one of 16, 32, 64, 128 with the v1 engine" in str(err.value)
    scenario["server"] = {**scenario.get("server", {}), "block_size": 8}   # the scenario's own key: its own problem
    with pytest.raises(InputError) as err:
        load_scenario(scenario)
    assert "server.block_size: got 8" in str(err.value)

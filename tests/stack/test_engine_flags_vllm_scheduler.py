"""vLLM flags checked against the simulated scheduler, context and node: --block-size, --swap-space, V0's chunked
prefill in a scenario's manifest, and one rule each for the context rendered and the engine simulated
(simulation/engine_flags.py `restated_problems`; review rev12-runtimes F6/F9, rev12-diff F5/F7)."""

from __future__ import annotations

import copy

import pytest

from gate import scenario_for
from simulation import load_scenario
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from runtime_stack import OPENAI, refused, rt_cfg, sim_spec


# --- --block-size takes vLLM's choices, and the engine's attention backend's (rev12-runtimes F6) ----------------------
@pytest.mark.parametrize("runtime", [{"engine": "vllm"}, {"engine": "vllm", "image": OPENAI}], ids=["hf", "openai"])
@pytest.mark.parametrize("size", ["7", "24", "256", "0"])
def test_a_block_size_outside_vllms_choices_is_refused(runtime, size):
    """r5: --block-size=7 and 24 passed; vLLM's argparse choices (config/cache.py BlockSize, 0.8.5–0.11.0) are
    1, 8, 16, 32, 64, 128 (0.11.1 adds 256)."""
    text = refused(rt_cfg({**runtime, "args": [f"--block-size={size}"]}))
    assert f"got '--block-size={size}'; expected one of 1, 8, 16, 32, 64, 128 (vLLM's argparse choices" in text


def test_a_block_size_the_schedulers_attention_backend_refuses_is_refused():
    """V1's FlashAttention: 'Block size must be a multiple of 16'; V0's xFormers paged attention: 8, 16 or 32."""
    text = refused(rt_cfg({"engine": "vllm", "args": ["--block-size=8"]}))
    assert "got '--block-size=8'; expected one of 16, 32, 64, 128 with the v1 engine" in text
    assert "multiple of 16" in text
    text = refused(rt_cfg({"engine": "vllm", "args": ["--block-size=1"], "env": {"VLLM_USE_V1": "0"}}))
    assert "got '--block-size=1'; expected one of 8, 16, 32, 64, 128 with the v0 engine" in text
    assert sim_spec(rt_cfg({"engine": "vllm", "args": ["--block-size=8"], "env": {"VLLM_USE_V1": "0"}})).block_size == 8
    assert sim_spec(rt_cfg({"engine": "vllm", "image": OPENAI, "args": ["--block-size", "128"]})).block_size == 128


# --- --swap-space allocates nothing on V1 (rev12-runtimes F9) ---------------------------------------------------------
def test_swap_space_is_accepted_on_v1_and_changes_nothing_simulated():
    """V1 never swaps (it preempts by recompute) and allocates no CPU blocks for it; the flag was refused."""
    spec = sim_spec(rt_cfg({"engine": "vllm", "args": ["--swap-space=16"]}))
    assert spec == sim_spec(rt_cfg({"engine": "vllm"}))
    sim_spec(rt_cfg({"engine": "vllm", "image": OPENAI, "args": ["--swap-space", "0"]}))
    # at most the default
    sim_spec(rt_cfg({"engine": "vllm", "args": ["--swap-space=2"], "env": {"VLLM_USE_V1": "0"}}))


@pytest.mark.parametrize("runtime, gpus, arg, why", [
    ({"engine": "vllm"}, 4, "--swap-space=100", "expected at most 63.8 GiB: vLLM refuses to start when --swap-space "
                                                "× 4 GPU(s) exceeds 0.7 × the node's 364.8 GiB of memory (psutil's "
                                                "total, the kernel's MemTotal"),
    ({"engine": "vllm"}, 4, "--swap-space=66", "expected at most 63.8 GiB"),   # under 0.7 × the nominal 384 GiB
    ({"engine": "vllm", "image": OPENAI}, 1, "--swap-space=256", "expected at most 255.4 GiB"),
    ({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}}, 1, "--swap-space=8", "expected at most 4 (vLLM's default) "
                                                                             "with the v0 engine"),
    ({"engine": "vllm"}, 1, "--swap-space=-1", "expected GiB of CPU swap space per GPU, a number >= 0"),
    ({"engine": "vllm"}, 1, "--swap-space=inf", "expected GiB of CPU swap space per GPU, a number >= 0"),
])
def test_a_swap_space_vllm_refuses_or_v0_pins_beyond_the_default_is_refused(runtime, gpus, arg, why):
    text = refused(rt_cfg({**runtime, "args": [arg]}, gpus))
    assert f"services[0].runtime.args: got '{arg}'; {why}" in text


def test_the_swap_space_bound_is_the_nodes_memtotal_as_the_catalog_estimates_it():
    """r5: 0.7 × g6e.12xlarge's nominal 384 GiB let --swap-space=66 × 4 GPUs (264 GiB) pass; vLLM bounds it by
    psutil's total, which `catalog.allocatable.capacity_memory_mib` puts at 364.8 GiB (255.4 GiB allowed)."""
    from catalog import DEFAULT
    from catalog.allocatable import capacity_memory_mib

    memtotal = capacity_memory_mib(DEFAULT.instances["g6e.12xlarge"]) / 1024
    assert 66 * 4 > 0.7 * memtotal and 63 * 4 <= 0.7 * memtotal
    sim_spec(rt_cfg({"engine": "vllm", "args": ["--swap-space=63"]}, gpus=4))


# --- a scenario's manifest gets the V0 chunked-prefill and swap checks the stack gets (rev12-diff F5) -----------------
def _v0(args: list[str], model: str = "llama-3-8b", **caps) -> dict:
    cfg = rt_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}, "args": args})
    cfg["services"][0]["limits"] = caps
    cfg["services"][0]["model"]["name"] = model
    return cfg


def _v0_scenario(*extra: str, model: str = "llama-3-8b", **caps) -> dict:
    stack = parse_stack_config(_v0([], model, **caps), "p", "dev")
    scenario = scenario_for(stack, stack.services[0])
    scenario["inferenceService"]["spec"]["predictor"]["model"]["args"] += list(extra)
    return scenario


def _scenario_refuses(scenario: dict) -> str:
    with pytest.raises(InputError) as err:
        load_scenario(scenario)
    return str(err.value)


@pytest.mark.parametrize("extra, why", [
    (["--enable-chunked-prefill"], "vLLM's V0 engine prefills whole prompts at a context of 32,768 tokens or less"),
    (["--swap-space=64"], "expected at most 4 (vLLM's default) with the v0 engine"),
])
def test_a_scenario_manifest_on_v0_is_refused_what_the_stack_refuses(extra, why):
    """r3: both were accepted in a scenario's own manifest (manifest_problems ran no restated check)."""
    text = _scenario_refuses(_v0_scenario(*extra, maxInputTokens=4096, maxNewTokens=1024))
    assert f"inferenceService.spec.predictor.model.args: got '{extra[0]}'; expected" in text and why in text
    assert why in refused(_v0(extra))


LONG = "llama-3.1-8b"   # 131,072 tokens: V0 chunks by default above 32,768


def test_the_v0_chunking_check_reads_the_context_the_manifest_renders():
    """The context is `--max-model-len` in the args, else maxInputTokens + maxNewTokens, else the model's; the
    stack and a scenario's manifest read it through one rule (engine_flags.restated_problems)."""
    off, on = "--no-enable-chunked-prefill", "--enable-chunked-prefill"
    assert "chunks prefills by default above a 32,768-token context" in refused(_v0([off], LONG))
    assert "chunks prefills by default" in _scenario_refuses(_v0_scenario(off, model=LONG))
    sim_spec(_v0([on], LONG))
    load_scenario(_v0_scenario(on, model=LONG))
    short = {"maxInputTokens": 16384, "maxNewTokens": 1024}
    assert f"({LONG} at 17408)" in refused(_v0([on], LONG, **short))
    assert f"({LONG} at 17408)" in _scenario_refuses(_v0_scenario(on, model=LONG, **short))
    sim_spec(_v0([off], LONG, **short))
    load_scenario(_v0_scenario(off, model=LONG, **short))
    sim_spec(_v0(["--max-model-len=16k", off], LONG))
    assert f"({LONG} at 16000)" in refused(_v0(["--max-model-len=16k", on], LONG))


# --- one rule each for the context the manifest renders and the vLLM engine simulated (rev12-diff F7) -----------------
def test_the_simulated_vllm_engine_is_one_rule_engine_profile_over_vllm_use_v1():
    """The stack loader, the advice and the scenario's manifest check resolve the engine with `vllm_scheduler`,
    the simulation's priority: `server:` keys (engineProfile.scheduler) over the manifest's VLLM_USE_V1."""
    from simulation.engine_flags import vllm_scheduler

    assert vllm_scheduler({}) == "v1" and vllm_scheduler({"VLLM_USE_V1": "0"}) == "v0"
    assert vllm_scheduler({"VLLM_USE_V1": "0"}, "v1") == "v1" and vllm_scheduler({}, "v0") == "v0"
    scenario = _v0_scenario()
    assert load_scenario(copy.deepcopy(scenario)).server.spec.scheduler == "v0"
    scenario["server"] = {"scheduler": "v1"}
    assert load_scenario(scenario).server.spec.scheduler == "v1"


@pytest.mark.parametrize("caps, args", [
    ({"maxInputTokens": 4096, "maxNewTokens": 1024}, []), ({"maxInputTokens": 4096}, []), ({}, []),
    ({}, ["--max-model-len=2k"]), ({"maxNewTokens": 512}, []),
])
def test_the_context_the_manifest_renders_is_one_rule(caps, args):
    """`runtimes.served_context` is what manifests/inference_service.py renders and what the gate simulates."""
    from stackconfig.server_args import stack_args
    from stackconfig.runtimes import rendered_context, served_context

    cfg = rt_cfg({"engine": "vllm", "args": args})
    cfg["services"][0]["limits"] = caps
    svc = parse_stack_config(cfg, "p", "dev").services[0]
    rendered = [a for a in stack_args(svc) if a.startswith("--max-model-len=")]
    assert rendered == ([f"--max-model-len={rendered_context(svc.caps)}"] if rendered_context(svc.caps) else [])
    served = served_context(svc.engine, svc.image, svc.args, svc.caps, svc.model)
    assert served == sim_spec(cfg).max_model_len

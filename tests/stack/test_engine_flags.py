"""`runtime.args` and `runtime.env` as the engine reads them, checked at load and simulated with the same value
(simulation/engine_flags.py; review rev-engine findings 1, 3 and 4).

Sources: kserve huggingfaceserver `vllm/vllm_model.py: start_engine` (tensor parallelism = the GPU count) and
`__main__.py` (parse_known_args: no `_` → `-`, unknown flags dropped); vllm `FlexibleArgumentParser.parse_args`
(`_` read as `-`), `engine/arg_utils.py: human_readable_int`, `envs.py` (VLLM_USE_V1); text-generation-inference
v3.3.4 `launcher/src/main.rs` (`#[clap(long, env)]`, `find_num_shards`).
"""

from __future__ import annotations

import copy

import pytest

from gate import scenario_for
from simulation import load_scenario
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

OPENAI = "vllm/vllm-openai:v0.11.0"
TGI_IMAGE = "ghcr.io/huggingface/text-generation-inference:3.3.4"
BASE = {
    "cluster": {"name": "c", "subnetIds": ["subnet-0a1b2c3d"], "createNodeRole": True},
    "gpuNodeGroup": {"instanceTypes": ["g6e.12xlarge"]},   # 4 × L40S
    "services": [{"name": "chat", "maxReplicas": 2, "resources": {"gpus": 1, "cpu": "4", "memory": "24Gi"},
                  "model": {"name": "llama-3-8b", "storageUri": "hf://m/l", "public": True},
                  "workload": {"kind": "poisson", "rate": 1.0}}],
}


def _cfg(runtime: dict, gpus: int = 1, **top) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["services"][0]["runtime"] = runtime
    cfg["services"][0]["resources"]["gpus"] = gpus
    cfg.update(top)
    return cfg


def _spec(cfg: dict):
    stack = parse_stack_config(cfg, "p", "dev")
    return load_scenario(scenario_for(stack, stack.services[0])).server.spec


def _refused(cfg: dict) -> str:
    with pytest.raises(InputError) as err:
        parse_stack_config(cfg, "p", "dev")
    return str(err.value)


# --- Finding 1: tensor parallelism is the pod's GPU count -----------------------------------------------------
@pytest.mark.parametrize("runtime, gpus, arg, why", [
    ({"engine": "vllm"}, 2, "--tensor-parallel-size=4", "KServe's huggingfaceserver ignores it"),
    ({"engine": "vllm"}, 2, "-tp=1", "KServe's huggingfaceserver ignores it"),
    ({"engine": "vllm", "image": OPENAI}, 1, "--tensor-parallel-size=2", "cannot start more workers"),
    ({"engine": "vllm", "image": OPENAI}, 1, "--tensor_parallel_size=2", "cannot start more workers"),
    ({"engine": "tgi"}, 1, "--num-shard=2", "fails with more shards than visible GPUs"),
], ids=["hf", "hf-short", "vllm-openai", "vllm-openai-underscore", "tgi"])
def test_a_tensor_parallel_flag_other_than_the_gpu_count_is_refused(runtime, gpus, arg, why):
    text = _refused(_cfg({**runtime, "args": [arg]}, gpus))
    assert f"services[0].runtime.args: got '{arg}'; expected {gpus} (resources.gpus) or no such setting" in text
    assert why in text
    _spec(_cfg({**runtime, "args": [f"{arg.split('=')[0]}={gpus}"]}, gpus))     # control: restating it is fine


def test_tgi_shard_settings_in_env_or_sharded_must_match_the_gpus():
    text = _refused(_cfg({"engine": "tgi", "env": {"NUM_SHARD": "2"}}))
    assert "services[0].runtime.env.NUM_SHARD: got '2'; expected 1 (resources.gpus)" in text
    text = _refused(_cfg({"engine": "tgi", "args": ["--sharded=true"]}))
    assert "got '--sharded=true'; expected false with 1 GPU(s)" in text and "find_num_shards" in text


def test_the_simulation_runs_the_gpu_count_whatever_the_flag_says():
    """r03: llama-3-70b on 2 L40S with `--tensor-parallel-size=4` was simulated at tp 4 (and started)."""
    from simulation.isvc import ServingSpec, server_from_manifest

    man = {"metadata": {"annotations": {"preflight.kserve.io/engine": "vllm",
                                        "preflight.kserve.io/model": "llama-3-70b"}}}
    derived = server_from_manifest(man, ServingSpec(gpus=2, args=("--max-model-len=4096", "--tensor-parallel-size=4")))
    assert derived["tensor_parallel_size"] == 2
    one = server_from_manifest(man, ServingSpec(gpus=1, args=("--tensor-parallel-size=4",)))
    assert "tensor_parallel_size" not in one


# --- Finding 3: spellings, human-readable values, unmodelled flags --------------------------------------------
def test_vllm_openai_reads_underscores_and_the_gate_simulates_them():
    spec = _spec(_cfg({"engine": "vllm", "image": OPENAI,
                       "args": ["--max_num_seqs=8", "--max_num_batched_tokens", "512", "--max-model-len=4k"]}))
    assert (spec.max_num_seqs, spec.max_num_batched_tokens, spec.max_model_len) == (8, 512, 4000)


def test_huggingfaceserver_reads_human_readable_ints_but_drops_underscored_vllm_flags():
    spec = _spec(_cfg({"engine": "vllm", "args": ["--max-num-batched-tokens", "4K", "--max-model-len=4k"]}))
    assert (spec.max_num_batched_tokens, spec.max_model_len) == (4096, 4000)
    text = _refused(_cfg({"engine": "vllm", "args": ["--max_num_seqs=8"]}))
    assert "services[0].runtime.args: got '--max_num_seqs=8'; expected --max-num-seqs: KServe's huggingfaceserver " \
           "parses its flags with parse_known_args" in text


def test_a_max_model_len_beyond_the_model_context_is_refused_as_vllm_reads_it():
    """r04: chat (llama-3-8b, 8192) with `--max-model-len=16k`: vLLM reads 16000 and refuses to start."""
    text = _refused(_cfg({"engine": "vllm", "args": ["--max-model-len=16k"]}))
    assert "services[0].runtime.args: got '--max-model-len=16k'; expected a context of at most 8192 tokens" in text
    assert "read as 16000" in text
    assert _spec(_cfg({"engine": "vllm", "args": ["--max-model-len=8k"]})).max_model_len == 8000   # control


@pytest.mark.parametrize("value", ["auto", "-1", "lots"])
def test_an_auto_or_unreadable_max_model_len_is_refused(value):
    text = _refused(_cfg({"engine": "vllm", "args": ["--max-model-len", value]}))
    assert f"got '--max-model-len {value}'; expected a number of tokens such as 8192 or 8k" in text
    assert "'auto' and -1, which newer vLLM fit to the KV cache, are not simulated" in text


@pytest.mark.parametrize("runtime, arg", [
    ({"engine": "vllm"}, "--dtype=float32"),
    ({"engine": "vllm"}, "--kv-cache-dtype=fp8"),
    ({"engine": "vllm"}, "--quantization=awq"),
    ({"engine": "vllm"}, "--enforce-eager"),
    ({"engine": "vllm", "image": OPENAI}, "--kv-cache-memory=8G"),
    ({"engine": "vllm", "image": OPENAI}, "--long_prefill_token_threshold=512"),
    ({"engine": "tgi"}, "--quantize=awq"),
    ({"engine": "tgi"}, "--max_batch_size=8"),
    ({"engine": "naive"}, "--dtype=float32"),
])
def test_an_engine_flag_the_simulation_does_not_model_is_refused_with_the_allowed_ones(runtime, arg):
    text = _refused(_cfg({**runtime, "args": [arg]}))
    assert f"services[0].runtime.args: got '{arg}'; expected" in text
    modelled = {"vllm": "--max-num-seqs", "tgi": "--max-batch-size", "naive": "--max_length"}[runtime["engine"]]
    assert ("changes neither GPU memory nor scheduling" in text and modelled in text
            or "expected --max-batch-size: TGI's launcher (clap) knows no other spelling" in text)


@pytest.mark.parametrize("runtime, args", [
    ({"engine": "vllm"}, ["--served-model-name=chat-v2", "--trust-remote-code", "--chat-template", "/t.jinja",
                          "--disable-log-requests", "--enable-prefix-caching", "--block-size=32"]),
    ({"engine": "vllm", "image": OPENAI}, ["--served_model_name=x", "--uvicorn-log-level=warning", "--seed", "1"]),
    ({"engine": "tgi"}, ["--json-output", "--hostname=0.0.0.0", "--max-best-of=1"]),
    ({"engine": "naive"}, ["--trust_remote_code", "--disable_log_requests"]),
])
def test_neutral_and_modelled_flags_are_accepted(runtime, args):
    _spec(_cfg({**runtime, "args": args}))


def test_block_size_and_disabled_prefix_caching_reach_the_simulation():
    spec = _spec(_cfg({"engine": "vllm", "args": ["--block-size=32", "--no-enable-prefix-caching"]}))
    assert spec.block_size == 32 and spec.prefix_cache_hit_ratio == 0.0
    cfg = _cfg({"engine": "vllm", "args": ["--no-enable-prefix-caching"]})
    cfg["services"][0]["engineProfile"] = {"prefixCacheHitRatio": 0.3}
    assert "services[0].engineProfile.prefixCacheHitRatio: got 0.3; expected 0 or none" in _refused(cfg)


def test_tgi_refuses_a_flag_given_twice_by_the_user():
    text = _refused(_cfg({"engine": "tgi", "args": ["--max-best-of=1", "--max-best-of=2"]}))
    assert "got '--max-best-of=2'; expected each flag once" in text


def test_the_stack_renders_and_the_user_repeats_one_setting_in_another_spelling():
    """huggingfaceserver's --max_model_len and vLLM's --max-model-len set one value (argparse keeps the last)."""
    from manifests.admission import check_pods_can_run

    cfg = _cfg({"engine": "vllm", "args": ["--max_model_len=4096"]})
    cfg["services"][0]["limits"] = {"maxInputTokens": 2048, "maxNewTokens": 1024}
    with pytest.raises(InputError) as err:
        check_pods_can_run(parse_stack_config(cfg, "p", "dev"))
    assert "services[0].runtime.args: got '--max_model_len=4096'; expected no flag the stack already renders" \
        in str(err.value)


# --- Finding 4: runtime.env reaches the engine ----------------------------------------------------------------
def test_vllm_use_v1_0_selects_the_v0_scheduler_where_the_image_has_one():
    assert _spec(_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}})).scheduler == "v0"   # KServe 0.15: vLLM 0.8.5
    assert _spec(_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "1"}})).scheduler == "v1"
    old = _spec(_cfg({"engine": "vllm", "image": "vllm/vllm-openai:v0.10.1", "env": {"VLLM_USE_V1": "0"}}))
    assert old.scheduler == "v0"


@pytest.mark.parametrize("runtime, top, why", [
    ({"engine": "vllm", "image": OPENAI}, {}, "vLLM 0.11 has no V0 engine"),
    ({"engine": "vllm"}, {"kserve": {"version": "0.17"}}, "KServe 0.17's huggingfaceserver ships vLLM 0.15"),
], ids=["vllm-openai-0.11", "kserve-0.17"])
def test_vllm_use_v1_0_is_refused_where_the_vllm_has_no_v0(runtime, top, why):
    text = _refused(_cfg({**runtime, "env": {"VLLM_USE_V1": "0"}}, **top))
    assert "services[0].runtime.env.VLLM_USE_V1: got '0'; expected 1 or no VLLM_USE_V1" in text and why in text


def test_vllm_use_v1_must_be_an_int_and_agree_with_engine_profile():
    assert "got 'false'; expected 0 or 1" in _refused(_cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "false"}}))
    cfg = _cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}})
    cfg["services"][0]["engineProfile"] = {"scheduler": "v1"}
    assert "runtime.env.VLLM_USE_V1: got '0'; expected a value that selects engineProfile.scheduler" in _refused(cfg)


def test_tgi_reads_its_launcher_variables_and_a_flag_wins_over_its_variable():
    """r07: CUDA_MEMORY_FRACTION=0.5 and MAX_BATCH_PREFILL_TOKENS=512 were ignored."""
    env = {"CUDA_MEMORY_FRACTION": "0.5", "MAX_BATCH_PREFILL_TOKENS": "512", "TGI_WIGGLE_ROOM": "0.8",
           "MAX_BATCH_SIZE": "4"}
    spec = _spec(_cfg({"engine": "tgi", "env": env, "args": ["--max-batch-size=8"]}))
    assert (spec.gpu_memory_utilization, spec.max_num_batched_tokens, spec.wiggle_room) == (0.5, 512, 0.8)
    assert spec.max_num_seqs == 8                                   # clap: the flag over MAX_BATCH_SIZE
    plain = _spec(_cfg({"engine": "tgi"}))
    assert plain.budget.kv_tokens > spec.budget.kv_tokens          # half the memory fraction: a smaller pool


@pytest.mark.parametrize("engine, name, value", [
    ("tgi", "QUANTIZE", "awq"), ("tgi", "ATTENTION", "flashinfer"), ("tgi", "MAX_INPUT_LENGTH", "1024"),
    ("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1"), ("tgi", "CUDA_MEMORY_FRACTION", "1.5"),
])
def test_an_engine_variable_the_simulation_does_not_model_is_refused(engine, name, value):
    text = _refused(_cfg({"engine": engine, "env": {name: value}}))
    assert f"services[0].runtime.env.{name}: got '{value}'; expected" in text
    _spec(_cfg({"engine": engine, "env": {"HF_HUB_OFFLINE": "1", "NCCL_DEBUG": "WARN"}}))   # control: not settings

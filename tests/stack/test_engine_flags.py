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
from runtime_stack import chat_stack, refused

OPENAI = "vllm/vllm-openai:v0.11.0"
BASE = chat_stack()


def _cfg(runtime: dict, gpus: int = 1, **top) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["services"][0]["runtime"] = runtime
    cfg["services"][0]["resources"]["gpus"] = gpus
    cfg.update(top)
    return cfg


def _spec(cfg: dict):
    stack = parse_stack_config(cfg, "p", "dev")
    return load_scenario(scenario_for(stack, stack.services[0])).server.spec


_refused = refused


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
    ({"engine": "vllm", "image": OPENAI}, "--kv-cache-memory=8G"),   # --enforce-eager …: test_vllm_flags.py
    ({"engine": "tgi"}, "--quantize=awq"),
    ({"engine": "tgi"}, "--max_batch_size=8"),
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
    cfg = _cfg({"engine": "vllm", "args": ["--max_model_len=4096"]})
    cfg["services"][0]["limits"] = {"maxInputTokens": 2048, "maxNewTokens": 1024}
    assert "services[0].runtime.args: got '--max_model_len=4096'; expected --max-model-len=3072 or no such flag" \
        in _refused(cfg)


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


# --- Review rev-diff findings 1, 2, 6: switches given a value, TGI's number syntax, typed and common neutral flags --
@pytest.mark.parametrize("runtime, arg", [
    ({"engine": "vllm"}, "--disable-custom-all-reduce=false"),
    ({"engine": "vllm", "image": OPENAI}, "--no-enable-prefix-caching=true"),
    ({"engine": "tgi"}, "--trust-remote-code=false"),
    ({"engine": "naive"}, "--trust_remote_code=True"),
], ids=["hf", "vllm-openai", "tgi", "naive"])
def test_a_switch_given_a_value_is_refused_as_argparse_and_clap_refuse_it(runtime, arg):
    """argparse: "ignored explicit argument 'false'"; clap (SetTrue): "unexpected value". It was read as ON."""
    name = arg.split("=")[0]
    assert f"got '{arg}'; expected {name} alone: a switch takes no value" in _refused(_cfg({**runtime, "args": [arg]}))
    _spec(_cfg({**runtime, "args": [name]}))                                     # control: the switch alone


@pytest.mark.parametrize("where, given", [
    ("args", "--max-batch-size=1_024"), ("args", "--max-batch-size= 8"), ("args", "--max-batch-size=\u0668"),
    ("args", "--cuda-memory-fraction=0.9_5"), ("args", "--max-batch-prefill-tokens=4294967296"),
    ("env", {"MAX_BATCH_SIZE": "1_024"}), ("env", {"CUDA_MEMORY_FRACTION": " 0.5"}),
])
def test_tgi_numbers_are_read_as_rusts_fromstr_reads_them(where, given):
    """clap parses usize/u32/f32 with Rust's FromStr: no '_', no spaces, ASCII digits, the type's range."""
    runtime = {"engine": "tgi", where: [given] if where == "args" else given}
    text = _refused(_cfg(runtime))
    shown = given if where == "args" else next(iter(given.values()))
    assert f"got '{shown}'; expected" in text and "FromStr" in text


def test_tgi_numbers_in_plain_ascii_are_read():
    spec = _spec(_cfg({"engine": "tgi", "args": ["--max-batch-size=+8", "--cuda-memory-fraction=.5"],
                       "env": {"MAX_BATCH_PREFILL_TOKENS": "512"}}))
    assert (spec.max_num_seqs, spec.gpu_memory_utilization, spec.max_num_batched_tokens) == (8, 0.5, 512)


@pytest.mark.parametrize("runtime, args, shown", [
    ({"engine": "vllm", "image": OPENAI}, ["--seed", "abc"], "--seed abc"),
    ({"engine": "vllm"}, ["--max-log-len=ten"], "--max-log-len=ten"),
    ({"engine": "tgi"}, ["--prometheus-port", "abc"], "--prometheus-port abc"),
    ({"engine": "tgi"}, ["--prometheus-port=70000"], "--prometheus-port=70000"),
    ({"engine": "tgi"}, ["--validation-workers=0"], "--validation-workers=0"),
    ({"engine": "tgi"}, ["--sharded=True"], "--sharded=True"),
    ({"engine": "tgi"}, ["--usage-stats=none"], "--usage-stats=none"),
    ({"engine": "vllm"}, ["--distributed-executor-backend=external_launcher"],
     "--distributed-executor-backend=external_launcher"),
])
def test_a_neutral_flag_with_a_value_its_server_refuses_is_refused(runtime, args, shown):
    assert f"got '{shown}'; expected" in _refused(_cfg({**runtime, "args": args}, gpus=2))


@pytest.mark.parametrize("runtime, args", [
    ({"engine": "vllm"}, ["--enable-chunked-prefill", "--enable-prefix-caching", "--generation-config", "auto",
                          "--distributed-executor-backend", "mp", "--disable-uvicorn-access-log",
                          "--allowed-origins", '["*"]', "--otlp-traces-endpoint", "http://otel:4317", "--seed", "0"]),
    ({"engine": "vllm", "image": OPENAI}, ["--enable_chunked_prefill", "--max-log-len=100"]),
    ({"engine": "tgi"}, ["--env", "--max-input-length", "2048", "--prometheus-port=9001", "--validation-workers=4",
                         "--cors-allow-origin=a", "--cors-allow-origin=b", "--usage-stats=off"]),
    ({"engine": "tgi"}, ["-e", "-g", "30"]),
])
def test_common_flags_that_restate_a_default_or_change_nothing_simulated_are_accepted(runtime, args):
    _spec(_cfg({**runtime, "args": args}))


def test_chunked_prefill_may_only_restate_the_simulated_scheduler():
    """vLLM V1 chunks by default (the simulation's V1 always does); V0 at a context of 32K or less does not."""
    text = _refused(_cfg({"engine": "vllm", "args": ["--no-enable-chunked-prefill"]}))
    assert "got '--no-enable-chunked-prefill'; expected no --no-enable-chunked-prefill: the gate simulates the v1" \
           in text
    text = _refused(_cfg({"engine": "vllm", "args": ["--enable-chunked-prefill"], "env": {"VLLM_USE_V1": "0"}}))
    assert "got '--enable-chunked-prefill'; expected no --enable-chunked-prefill: vLLM's V0 engine prefills whole " \
           "prompts at a context of 32,768 tokens or less" in text


def test_tgi_max_input_length_is_the_legacy_name_of_max_input_tokens():
    """v3.3.4 main.rs: (None, Some(max_input_length)) → max_input_tokens; both set → the launcher refuses."""
    assert _spec(_cfg({"engine": "tgi", "args": ["--max-input-length=2048"]})).max_input_tokens == 2048
    text = _refused(_cfg({"engine": "tgi", "args": ["--max-input-tokens=1024", "--max-input-length=2048"]}))
    assert "got '--max-input-length=2048'; expected one of --max-input-tokens and --max-input-length" in text
    text = _refused(_cfg({"engine": "tgi", "args": ["--max-input-length=2048"], "env": {"MAX_INPUT_TOKENS": "1024"}}))
    assert "got '--max-input-length=2048'; expected --max-input-tokens, or no MAX_INPUT_TOKENS" in text
    text = _refused(_cfg({"engine": "tgi", "env": {"MAX_INPUT_LENGTH": "1024"}}))
    assert "legacy name of MAX_INPUT_TOKENS" in text and "not simulated" not in text


def test_the_stack_renders_max_input_tokens_and_the_user_adds_max_input_length():
    cfg = _cfg({"engine": "tgi", "args": ["--max-input-length=1024"]})
    cfg["services"][0]["limits"] = {"maxInputTokens": 2048, "maxNewTokens": 1024}
    assert "got '--max-input-length=1024'; expected no --max-input-length: the stack renders --max-input-tokens=2048" \
        in _refused(cfg)


def test_an_unknown_flag_and_its_value_are_one_problem():
    text = _refused(_cfg({"engine": "vllm", "args": ["--num-lookahead-slots", "4"]}))
    assert "got '--num-lookahead-slots 4'; expected a flag" in text and "got '4'" not in text


def test_the_server_and_the_stack_read_an_image_name_with_one_function():
    from simulation import engine_flags
    from stackconfig import runtimes

    assert runtimes.image_repository is engine_flags.image_repository


# --- Review rev12-runtimes F2: flags that move the server off the pod IP's port 8080 ---------------------------
@pytest.mark.parametrize("runtime, arg, why", [
    ({"engine": "vllm"}, "--http_port=9000", "expected 8080, KServe's default"),
    ({"engine": "naive"}, "--http_port=8081", "expected 8080, KServe's default"),
    ({"engine": "vllm"}, "--grpc_port=8080", "other than 8080 (the server's HTTP port"),
    ({"engine": "naive"}, "--grpc_port=8012", "and the queue-proxy's own (8008, 8012, 8013, 8022, 8112, 9090, 9091"),
    ({"engine": "vllm", "image": OPENAI}, "--host=127.0.0.1", "expected 0.0.0.0 or :: (every address)"),
    ({"engine": "vllm", "image": OPENAI}, "--host=localhost", "expected 0.0.0.0 or :: (every address)"),
    ({"engine": "tgi"}, "--hostname=127.0.0.1", "expected 0.0.0.0 or :: (every address)"),
    ({"engine": "tgi"}, "--prometheus-port=8080", "other than 8080 (the server's HTTP port"),
    ({"engine": "tgi"}, "--prometheus-port=9091", "and the queue-proxy's own"),
    ({"engine": "tgi"}, "--master-port=8022", "and the queue-proxy's own"),
])
def test_a_port_or_address_flag_that_moves_the_server_or_collides_is_refused(runtime, arg, why):
    """r10: each was accepted as neutral; the server then listened where no probe, queue-proxy or Service looks,
    or a second listener failed to bind (kserve model_server.py: gRPC on by default, 8081)."""
    text = _refused(_cfg({**runtime, "args": [arg]}, gpus=2))
    assert f"services[0].runtime.args: got '{arg}'; expected" in text and why in text


@pytest.mark.parametrize("runtime, args", [
    ({"engine": "vllm"}, ["--http_port=8080", "--grpc_port=8081", "--host=127.0.0.1"]),   # KServe ignores --host
    ({"engine": "naive"}, ["--http_port", "8080", "--grpc_port=9000"]),
    ({"engine": "vllm", "image": OPENAI}, ["--host=0.0.0.0"]),
    ({"engine": "vllm", "image": OPENAI}, ["--host", "::"]),
    ({"engine": "tgi"}, ["--hostname=::", "--prometheus-port=9000", "--master-port=29501"]),
    ({"engine": "tgi"}, ["--hostname=chat-predictor-0"]),   # not an IP: TGI's router listens on 0.0.0.0
])
def test_port_and_address_flags_that_keep_the_server_on_8080_are_accepted(runtime, args):
    _spec(_cfg({**runtime, "args": args}, gpus=2))


def test_tgi_reads_its_address_and_port_variables_too():
    """clap `#[clap(long, env)]`: HOSTNAME and PROMETHEUS_PORT set what the flags set."""
    text = _refused(_cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "8080", "HOSTNAME": "127.0.0.1"}}))
    assert "services[0].runtime.env.PROMETHEUS_PORT: got '8080'; expected a port, 0 to 65535, other than 8080" in text
    assert "services[0].runtime.env.HOSTNAME: got '127.0.0.1'; expected 0.0.0.0 or ::" in text
    spec = _spec(_cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "9001", "HOSTNAME": "0.0.0.0"}}))
    assert spec == _spec(_cfg({"engine": "tgi"}))   # checked only: nothing simulated changes


def test_the_serving_port_is_taken_in_both_modes():
    from simulation.pod_ports import taken_ports
    from validation.defaults import SERVING_PORT

    assert SERVING_PORT in taken_ports("Knative") and SERVING_PORT in taken_ports("Standard")


# --- Review rev12-diff F2/F8: one rule for the ports the pod already uses, by deployment mode -------------------
def _in(mode: str, cfg: dict) -> dict:
    cfg["services"][0]["deploymentMode"] = mode
    return cfg


@pytest.mark.parametrize("runtime, arg", [
    ({"engine": "vllm"}, "--grpc_port=8012"),
    ({"engine": "naive"}, "--grpc_port=9091"),
    ({"engine": "tgi"}, "--prometheus-port=8013"),
    ({"engine": "tgi"}, "--master-port=9090"),
])
def test_a_listener_on_a_queue_proxy_port_is_refused_in_knative_mode_only(runtime, arg):
    """Standard (RawDeployment) mode runs no queue-proxy: 8012, 9091 … are free there, and were refused."""
    text = _refused(_in("Knative", _cfg({**runtime, "args": [arg]}, gpus=2)))
    assert f"got '{arg}'; expected a port, 0 to 65535, other than 8080" in text
    assert "and the queue-proxy's own (8008, 8012, 8013, 8022, 8112, 9090, 9091" in text
    _spec(_in("Standard", _cfg({**runtime, "args": [arg]}, gpus=2)))


@pytest.mark.parametrize("mode", ["Knative", "Standard"])
def test_a_listener_on_the_serving_port_is_refused_in_either_mode(mode):
    text = _refused(_in(mode, _cfg({"engine": "vllm", "args": ["--grpc_port=8080"]})))
    assert "got '--grpc_port=8080'; expected a port, 0 to 65535, other than 8080 (the server's HTTP port" in text
    assert f"which the pod already uses in {mode} mode" in text
    text = _refused(_in(mode, _cfg({"engine": "tgi", "env": {"MASTER_PORT": "8080"}})))
    assert "services[0].runtime.env.MASTER_PORT: got '8080'; expected a port, 0 to 65535, other than 8080" in text


def test_tgis_port_variables_follow_the_mode_too():
    text = _refused(_in("Knative", _cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "8012"}})))
    assert "services[0].runtime.env.PROMETHEUS_PORT: got '8012'; expected a port" in text
    _spec(_in("Standard", _cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "8012"}})))


def test_a_scenario_manifest_is_held_to_the_ports_of_its_own_mode():
    """The scenario's ServingSpec knows the mode: a Standard-mode manifest may listen on 8012, a Knative one not."""
    for mode, refused_too in (("Knative", True), ("Standard", False)):
        stack = parse_stack_config(_in(mode, _cfg({"engine": "vllm"})), "p", "dev")
        scenario = scenario_for(stack, stack.services[0])
        scenario["inferenceService"]["spec"]["predictor"]["model"]["args"].append("--grpc_port=8012")
        if refused_too:
            with pytest.raises(InputError) as err:
                load_scenario(scenario)
            assert "model.args: got '--grpc_port=8012'; expected a port" in str(err.value)
        else:
            load_scenario(scenario)


# --- Review rev12-runtimes F4: CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES in runtime.env -------------------
@pytest.mark.parametrize("engine", ["vllm", "tgi", "naive"])
@pytest.mark.parametrize("value", ["0", "0,1,2", "0,0,1,2", "0,1,2,4", "GPU-8a1b2c3d", "0, 1, 2, 3"])
def test_cuda_visible_devices_that_do_not_name_every_gpu_of_the_pod_are_refused(engine, value):
    """r8: 4 GPUs with CUDA_VISIBLE_DEVICES=0 ran one shard (huggingfaceserver: tp = torch.cuda.device_count();
    TGI: num_cuda_devices counts the variable) while the gate simulated four."""
    text = _refused(_cfg({"engine": engine, "env": {"CUDA_VISIBLE_DEVICES": value}}, gpus=4))
    assert f"services[0].runtime.env.CUDA_VISIBLE_DEVICES: got '{value}'; expected no CUDA_VISIBLE_DEVICES, or " \
           "0,1,2,3 (each of the pod's 4 GPU(s) once)" in text
    assert "one shard per GPU of resources.gpus" in text


@pytest.mark.parametrize("engine", ["vllm", "tgi", "naive"])
def test_cuda_visible_devices_naming_every_gpu_of_the_pod_is_accepted(engine):
    _spec(_cfg({"engine": engine, "env": {"CUDA_VISIBLE_DEVICES": "3,1,0,2"}}, gpus=4))
    _spec(_cfg({"engine": engine, "env": {"CUDA_VISIBLE_DEVICES": "0"}}, gpus=1))


@pytest.mark.parametrize("engine", ["vllm", "tgi", "naive"])
def test_nvidia_visible_devices_is_the_device_plugins_and_refused(engine):
    text = _refused(_cfg({"engine": engine, "env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, gpus=2))
    assert "services[0].runtime.env.NVIDIA_VISIBLE_DEVICES: got 'all'; expected no NVIDIA_VISIBLE_DEVICES: the " \
           "NVIDIA device plugin sets it" in text


# --- Review rev12-runtimes F6: --block-size takes vLLM's choices, and the engine's attention backend's ----------
@pytest.mark.parametrize("runtime", [{"engine": "vllm"}, {"engine": "vllm", "image": OPENAI}], ids=["hf", "openai"])
@pytest.mark.parametrize("size", ["7", "24", "256", "0"])
def test_a_block_size_outside_vllms_choices_is_refused(runtime, size):
    """r5: --block-size=7 and 24 passed; vLLM's argparse choices (config/cache.py BlockSize, 0.8.5–0.11.0) are
    1, 8, 16, 32, 64, 128 (0.11.1 adds 256)."""
    text = _refused(_cfg({**runtime, "args": [f"--block-size={size}"]}))
    assert f"got '--block-size={size}'; expected one of 1, 8, 16, 32, 64, 128 (vLLM's argparse choices" in text


def test_a_block_size_the_schedulers_attention_backend_refuses_is_refused():
    """V1's FlashAttention: 'Block size must be a multiple of 16'; V0's xFormers paged attention: 8, 16 or 32."""
    text = _refused(_cfg({"engine": "vllm", "args": ["--block-size=8"]}))
    assert "got '--block-size=8'; expected one of 16, 32, 64, 128 with the v1 engine" in text
    assert "multiple of 16" in text
    text = _refused(_cfg({"engine": "vllm", "args": ["--block-size=1"], "env": {"VLLM_USE_V1": "0"}}))
    assert "got '--block-size=1'; expected one of 8, 16, 32, 64, 128 with the v0 engine" in text
    assert _spec(_cfg({"engine": "vllm", "args": ["--block-size=8"], "env": {"VLLM_USE_V1": "0"}})).block_size == 8
    assert _spec(_cfg({"engine": "vllm", "image": OPENAI, "args": ["--block-size", "128"]})).block_size == 128


# --- Review rev12-runtimes F9: --swap-space allocates nothing on V1 ----------------------------------------------
def test_swap_space_is_accepted_on_v1_and_changes_nothing_simulated():
    """V1 never swaps (it preempts by recompute) and allocates no CPU blocks for it; the flag was refused."""
    spec = _spec(_cfg({"engine": "vllm", "args": ["--swap-space=16"]}))
    assert spec == _spec(_cfg({"engine": "vllm"}))
    _spec(_cfg({"engine": "vllm", "image": OPENAI, "args": ["--swap-space", "0"]}))
    _spec(_cfg({"engine": "vllm", "args": ["--swap-space=2"], "env": {"VLLM_USE_V1": "0"}}))   # at most the default


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
    text = _refused(_cfg({**runtime, "args": [arg]}, gpus))
    assert f"services[0].runtime.args: got '{arg}'; {why}" in text


def test_the_swap_space_bound_is_the_nodes_memtotal_as_the_catalog_estimates_it():
    """r5: 0.7 × g6e.12xlarge's nominal 384 GiB let --swap-space=66 × 4 GPUs (264 GiB) pass; vLLM bounds it by
    psutil's total, which `catalog.allocatable.capacity_memory_mib` puts at 364.8 GiB (255.4 GiB allowed)."""
    from catalog import DEFAULT
    from catalog.allocatable import capacity_memory_mib

    memtotal = capacity_memory_mib(DEFAULT.instances["g6e.12xlarge"]) / 1024
    assert 66 * 4 > 0.7 * memtotal and 63 * 4 <= 0.7 * memtotal
    _spec(_cfg({"engine": "vllm", "args": ["--swap-space=63"]}, gpus=4))


# --- Review rev12-diff F5: a scenario's manifest gets the V0 chunked-prefill and swap checks the stack gets ------
def _v0(args: list[str], model: str = "llama-3-8b", **caps) -> dict:
    cfg = _cfg({"engine": "vllm", "env": {"VLLM_USE_V1": "0"}, "args": args})
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
    assert why in _refused(_v0(extra))


LONG = "llama-3.1-8b"   # 131,072 tokens: V0 chunks by default above 32,768


def test_the_v0_chunking_check_reads_the_context_the_manifest_renders():
    """The context is `--max-model-len` in the args, else maxInputTokens + maxNewTokens, else the model's; the
    stack and a scenario's manifest read it through one rule (engine_flags.restated_problems)."""
    off, on = "--no-enable-chunked-prefill", "--enable-chunked-prefill"
    assert "chunks prefills by default above a 32,768-token context" in _refused(_v0([off], LONG))
    assert "chunks prefills by default" in _scenario_refuses(_v0_scenario(off, model=LONG))
    _spec(_v0([on], LONG))
    load_scenario(_v0_scenario(on, model=LONG))
    short = {"maxInputTokens": 16384, "maxNewTokens": 1024}
    assert f"({LONG} at 17408)" in _refused(_v0([on], LONG, **short))
    assert f"({LONG} at 17408)" in _scenario_refuses(_v0_scenario(on, model=LONG, **short))
    _spec(_v0([off], LONG, **short))
    load_scenario(_v0_scenario(off, model=LONG, **short))
    _spec(_v0(["--max-model-len=16k", off], LONG))
    assert f"({LONG} at 16000)" in _refused(_v0(["--max-model-len=16k", on], LONG))


# --- Review rev12-diff F7: one rule each for the context the manifest renders and the vLLM engine simulated ------
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

    cfg = _cfg({"engine": "vllm", "args": args})
    cfg["services"][0]["limits"] = caps
    svc = parse_stack_config(cfg, "p", "dev").services[0]
    rendered = [a for a in stack_args(svc) if a.startswith("--max-model-len=")]
    assert rendered == ([f"--max-model-len={rendered_context(svc.caps)}"] if rendered_context(svc.caps) else [])
    served = served_context(svc.engine, svc.image, svc.args, svc.caps, svc.model)
    assert served == _spec(cfg).max_model_len


def test_a_token_count_too_large_for_a_float_is_refused_at_runtime_args():
    text = _refused(_cfg({"engine": "vllm", "args": ["--max-model-len=" + "1" * 400 + "k"]}))
    assert "runtime.args" in text


@pytest.mark.parametrize("runtime, args", [
    ({"engine": "vllm"}, ["--dtype=auto"]), ({"engine": "vllm"}, ["--dtype", "bfloat16"]),
    ({"engine": "vllm", "image": OPENAI}, ["--dtype=half"]), ({"engine": "naive"}, ["--dtype=float16"]),
    ({"engine": "vllm"}, ["--kv-cache-dtype=auto"]), ({"engine": "tgi"}, ["--dtype", "bfloat16"]),
])
def test_a_dtype_of_two_bytes_restates_what_is_simulated_and_loads(runtime, args):
    """Review 12 (realistic configs), F2: `--dtype auto` is vLLM's default and float16/bfloat16/half are 2 bytes a
    weight, as the catalog's models are sized; they were refused as unmodelled."""
    _spec(_cfg({**runtime, "args": args}))


def test_tgis_dtype_variable_reads_as_its_flag():
    _spec(_cfg({"engine": "tgi", "env": {"DTYPE": "bfloat16"}}))
    text = _refused(_cfg({"engine": "tgi", "env": {"DTYPE": "float32"}}))
    assert "runtime.env.DTYPE: got 'float32'; expected float16 or bfloat16" in text


@pytest.mark.parametrize("runtime, arg, allowed", [
    ({"engine": "vllm"}, "--dtype=float32", "auto, half, float16 or bfloat16"),
    ({"engine": "naive"}, "--dtype=float32", "auto, half, float16 or bfloat16"),
    ({"engine": "vllm"}, "--kv-cache-dtype=fp8", "expected auto (the model's dtype"),
    ({"engine": "tgi"}, "--dtype=float32", "float16 or bfloat16"),
])
def test_a_dtype_that_changes_the_memory_is_refused(runtime, arg, allowed):
    text = _refused(_cfg({**runtime, "args": [arg]}))
    assert f"services[0].runtime.args: got '{arg}'; expected" in text and allowed in text


def test_vllms_own_server_may_be_served_under_the_name_its_clients_send():
    """Review 12 (realistic configs), F1: OpenAI clients send the Hugging Face id as `model`, so vllm-openai is
    commonly run with `--served-model-name <hf id>`; the stack's own `--served-model-name=<service>` made it a
    repeated flag, refused with a fix (rename the service) no service name can follow (it cannot hold '/')."""
    from manifests.admission import check_pods_can_run
    from stackconfig.server_args import engine_args

    name = "meta-llama/Meta-Llama-3-8B-Instruct"
    cfg = parse_stack_config(_cfg({"engine": "vllm", "image": OPENAI, "args": ["--served-model-name", name]}), "p",
                             "dev")
    svc = cfg.services[0]
    check_pods_can_run(cfg)
    assert not any(a.startswith("--served-model-name=") for a in engine_args(svc))
    plain = parse_stack_config(_cfg({"engine": "vllm", "image": OPENAI}), "p", "dev").services[0]
    assert f"--served-model-name={plain.name}" in engine_args(plain)

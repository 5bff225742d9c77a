"""`runtime.args` as each server reads them: flag spellings, human-readable and Rust-parsed values, switches,
neutral flags and the flags the simulation does not model, checked at load and simulated with the same value
(simulation/engine_flags.py; review rev-engine finding 3, rev-diff findings 1, 2 and 6, rev12-diff F7).

Sources: kserve huggingfaceserver `vllm/vllm_model.py: start_engine` (tensor parallelism = the GPU count) and
`__main__.py` (parse_known_args: no `_` → `-`, unknown flags dropped); vllm `FlexibleArgumentParser.parse_args`
(`_` read as `-`), `engine/arg_utils.py: human_readable_int`, `envs.py` (VLLM_USE_V1); text-generation-inference
v3.3.4 `launcher/src/main.rs` (`#[clap(long, env)]`, `find_num_shards`).
"""

from __future__ import annotations

import pytest

from stackconfig.schema import parse_stack_config
from runtime_stack import OPENAI, refused, rt_cfg, sim_spec


# --- spellings, human-readable values, unmodelled flags (rev-engine finding 3) ----------------------------------------
def test_vllm_openai_reads_underscores_and_the_gate_simulates_them():
    spec = sim_spec(rt_cfg({"engine": "vllm", "image": OPENAI,
                       "args": ["--max_num_seqs=8", "--max_num_batched_tokens", "512", "--max-model-len=4k"]}))
    assert (spec.max_num_seqs, spec.max_num_batched_tokens, spec.max_model_len) == (8, 512, 4000)


def test_huggingfaceserver_reads_human_readable_ints_but_drops_underscored_vllm_flags():
    spec = sim_spec(rt_cfg({"engine": "vllm", "args": ["--max-num-batched-tokens", "4K", "--max-model-len=4k"]}))
    assert (spec.max_num_batched_tokens, spec.max_model_len) == (4096, 4000)
    text = refused(rt_cfg({"engine": "vllm", "args": ["--max_num_seqs=8"]}))
    assert "services[0].runtime.args: got '--max_num_seqs=8'; expected --max-num-seqs: KServe's huggingfaceserver " \
           "parses its flags with parse_known_args" in text


def test_a_max_model_len_beyond_the_model_context_is_refused_as_vllm_reads_it():
    """r04: chat (llama-3-8b, 8192) with `--max-model-len=16k`: vLLM reads 16000 and refuses to start."""
    text = refused(rt_cfg({"engine": "vllm", "args": ["--max-model-len=16k"]}))
    assert "services[0].runtime.args: got '--max-model-len=16k'; expected a context of at most 8192 tokens" in text
    assert "read as 16000" in text
    assert sim_spec(rt_cfg({"engine": "vllm", "args": ["--max-model-len=8k"]})).max_model_len == 8000   # control


@pytest.mark.parametrize("value", ["auto", "-1", "lots"])
def test_an_auto_or_unreadable_max_model_len_is_refused(value):
    text = refused(rt_cfg({"engine": "vllm", "args": ["--max-model-len", value]}))
    assert f"got '--max-model-len {value}'; expected a number of tokens such as 8192 or 8k" in text
    assert "'auto' and -1, which newer vLLM fit to the KV cache, are not simulated" in text


@pytest.mark.parametrize("runtime, arg", [
    ({"engine": "vllm", "image": OPENAI}, "--kv-cache-memory=8G"),   # --enforce-eager …: test_vllm_flags.py
    ({"engine": "tgi"}, "--quantize=awq"),
    ({"engine": "tgi"}, "--max_batch_size=8"),
])
def test_an_engine_flag_the_simulation_does_not_model_is_refused_with_the_allowed_ones(runtime, arg):
    text = refused(rt_cfg({**runtime, "args": [arg]}))
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
    sim_spec(rt_cfg({**runtime, "args": args}))


def test_block_size_and_disabled_prefix_caching_reach_the_simulation():
    spec = sim_spec(rt_cfg({"engine": "vllm", "args": ["--block-size=32", "--no-enable-prefix-caching"]}))
    assert spec.block_size == 32 and spec.prefix_cache_hit_ratio == 0.0
    cfg = rt_cfg({"engine": "vllm", "args": ["--no-enable-prefix-caching"]})
    cfg["services"][0]["engineProfile"] = {"prefixCacheHitRatio": 0.3}
    assert "services[0].engineProfile.prefixCacheHitRatio: got 0.3; expected 0 or none" in refused(cfg)


def test_tgi_refuses_a_flag_given_twice_by_the_user():
    text = refused(rt_cfg({"engine": "tgi", "args": ["--max-best-of=1", "--max-best-of=2"]}))
    assert "got '--max-best-of=2'; expected each flag once" in text


def test_the_stack_renders_and_the_user_repeats_one_setting_in_another_spelling():
    """huggingfaceserver's --max_model_len and vLLM's --max-model-len set one value (argparse keeps the last)."""
    cfg = rt_cfg({"engine": "vllm", "args": ["--max_model_len=4096"]})
    cfg["services"][0]["limits"] = {"maxInputTokens": 2048, "maxNewTokens": 1024}
    assert "services[0].runtime.args: got '--max_model_len=4096'; expected --max-model-len=3072 or no such flag" \
        in refused(cfg)


# --- switches given a value, TGI's number syntax, typed and common neutral flags (rev-diff findings 1, 2, 6) ----------
@pytest.mark.parametrize("runtime, arg", [
    ({"engine": "vllm"}, "--disable-custom-all-reduce=false"),
    ({"engine": "vllm", "image": OPENAI}, "--no-enable-prefix-caching=true"),
    ({"engine": "tgi"}, "--trust-remote-code=false"),
    ({"engine": "naive"}, "--trust_remote_code=True"),
], ids=["hf", "vllm-openai", "tgi", "naive"])
def test_a_switch_given_a_value_is_refused_as_argparse_and_clap_refuse_it(runtime, arg):
    """argparse: "ignored explicit argument 'false'"; clap (SetTrue): "unexpected value". It was read as ON."""
    name = arg.split("=")[0]
    assert f"got '{arg}'; expected {name} alone: a switch takes no value" in refused(rt_cfg({**runtime, "args": [arg]}))
    sim_spec(rt_cfg({**runtime, "args": [name]}))                                     # control: the switch alone


@pytest.mark.parametrize("where, given", [
    ("args", "--max-batch-size=1_024"), ("args", "--max-batch-size= 8"), ("args", "--max-batch-size=\u0668"),
    ("args", "--cuda-memory-fraction=0.9_5"), ("args", "--max-batch-prefill-tokens=4294967296"),
    ("env", {"MAX_BATCH_SIZE": "1_024"}), ("env", {"CUDA_MEMORY_FRACTION": " 0.5"}),
])
def test_tgi_numbers_are_read_as_rusts_fromstr_reads_them(where, given):
    """clap parses usize/u32/f32 with Rust's FromStr: no '_', no spaces, ASCII digits, the type's range."""
    runtime = {"engine": "tgi", where: [given] if where == "args" else given}
    text = refused(rt_cfg(runtime))
    shown = given if where == "args" else next(iter(given.values()))
    assert f"got '{shown}'; expected" in text and "FromStr" in text


def test_tgi_numbers_in_plain_ascii_are_read():
    spec = sim_spec(rt_cfg({"engine": "tgi", "args": ["--max-batch-size=+8", "--cuda-memory-fraction=.5"],
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
    assert f"got '{shown}'; expected" in refused(rt_cfg({**runtime, "args": args}, gpus=2))


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
    sim_spec(rt_cfg({**runtime, "args": args}))


def test_chunked_prefill_may_only_restate_the_simulated_scheduler():
    """vLLM V1 chunks by default (the simulation's V1 always does); V0 at a context of 32K or less does not."""
    text = refused(rt_cfg({"engine": "vllm", "args": ["--no-enable-chunked-prefill"]}))
    assert "got '--no-enable-chunked-prefill'; expected no --no-enable-chunked-prefill: the gate simulates the v1" \
           in text
    text = refused(rt_cfg({"engine": "vllm", "args": ["--enable-chunked-prefill"], "env": {"VLLM_USE_V1": "0"}}))
    assert "got '--enable-chunked-prefill'; expected no --enable-chunked-prefill: vLLM's V0 engine prefills whole " \
           "prompts at a context of 32,768 tokens or less" in text


def test_tgi_max_input_length_is_the_legacy_name_of_max_input_tokens():
    """v3.3.4 main.rs: (None, Some(max_input_length)) → max_input_tokens; both set → the launcher refuses."""
    assert sim_spec(rt_cfg({"engine": "tgi", "args": ["--max-input-length=2048"]})).max_input_tokens == 2048
    text = refused(rt_cfg({"engine": "tgi", "args": ["--max-input-tokens=1024", "--max-input-length=2048"]}))
    assert "got '--max-input-length=2048'; expected one of --max-input-tokens and --max-input-length" in text
    text = refused(rt_cfg({"engine": "tgi", "args": ["--max-input-length=2048"], "env": {"MAX_INPUT_TOKENS": "1024"}}))
    assert "got '--max-input-length=2048'; expected --max-input-tokens, or no MAX_INPUT_TOKENS" in text
    text = refused(rt_cfg({"engine": "tgi", "env": {"MAX_INPUT_LENGTH": "1024"}}))
    assert "legacy name of MAX_INPUT_TOKENS" in text and "not simulated" not in text


def test_the_stack_renders_max_input_tokens_and_the_user_adds_max_input_length():
    cfg = rt_cfg({"engine": "tgi", "args": ["--max-input-length=1024"]})
    cfg["services"][0]["limits"] = {"maxInputTokens": 2048, "maxNewTokens": 1024}
    assert "got '--max-input-length=1024'; expected no --max-input-length: the stack renders --max-input-tokens=2048" \
        in refused(cfg)


def test_an_unknown_flag_and_its_value_are_one_problem():
    text = refused(rt_cfg({"engine": "vllm", "args": ["--num-lookahead-slots", "4"]}))
    assert "got '--num-lookahead-slots 4'; expected a flag" in text and "got '4'" not in text


def test_the_server_and_the_stack_read_an_image_name_with_one_function():
    from simulation import engine_flags
    from stackconfig import runtimes

    assert runtimes.image_repository is engine_flags.image_repository


# --- token counts, --dtype and the served model name ------------------------------------------------------------------
def test_a_token_count_too_large_for_a_float_is_refused_at_runtime_args():
    text = refused(rt_cfg({"engine": "vllm", "args": ["--max-model-len=" + "1" * 400 + "k"]}))
    assert "runtime.args" in text


@pytest.mark.parametrize("runtime, args", [
    ({"engine": "vllm"}, ["--dtype=auto"]), ({"engine": "vllm"}, ["--dtype", "bfloat16"]),
    ({"engine": "vllm", "image": OPENAI}, ["--dtype=half"]), ({"engine": "naive"}, ["--dtype=float16"]),
    ({"engine": "vllm"}, ["--kv-cache-dtype=auto"]), ({"engine": "tgi"}, ["--dtype", "bfloat16"]),
])
def test_a_dtype_of_two_bytes_restates_what_is_simulated_and_loads(runtime, args):
    """Review 12 (realistic configs), F2: `--dtype auto` is vLLM's default and float16/bfloat16/half are 2 bytes a
    weight, as the catalog's models are sized; they were refused as unmodelled."""
    sim_spec(rt_cfg({**runtime, "args": args}))


def test_tgis_dtype_variable_reads_as_its_flag():
    sim_spec(rt_cfg({"engine": "tgi", "env": {"DTYPE": "bfloat16"}}))
    text = refused(rt_cfg({"engine": "tgi", "env": {"DTYPE": "float32"}}))
    assert "runtime.env.DTYPE: got 'float32'; expected float16 or bfloat16" in text


@pytest.mark.parametrize("runtime, arg, allowed", [
    ({"engine": "vllm"}, "--dtype=float32", "auto, half, float16 or bfloat16"),
    ({"engine": "naive"}, "--dtype=float32", "auto, half, float16 or bfloat16"),
    ({"engine": "vllm"}, "--kv-cache-dtype=fp8", "expected auto (the model's dtype"),
    ({"engine": "tgi"}, "--dtype=float32", "float16 or bfloat16"),
])
def test_a_dtype_that_changes_the_memory_is_refused(runtime, arg, allowed):
    text = refused(rt_cfg({**runtime, "args": [arg]}))
    assert f"services[0].runtime.args: got '{arg}'; expected" in text and allowed in text


def test_vllms_own_server_may_be_served_under_the_name_its_clients_send():
    """Review 12 (realistic configs), F1: OpenAI clients send the Hugging Face id as `model`, so vllm-openai is
    commonly run with `--served-model-name <hf id>`; the stack's own `--served-model-name=<service>` made it a
    repeated flag, refused with a fix (rename the service) no service name can follow (it cannot hold '/')."""
    from manifests.admission import check_pods_can_run
    from stackconfig.server_args import engine_args

    name = "meta-llama/Meta-Llama-3-8B-Instruct"
    cfg = parse_stack_config(rt_cfg({"engine": "vllm", "image": OPENAI, "args": ["--served-model-name", name]}), "p",
                             "dev")
    svc = cfg.services[0]
    check_pods_can_run(cfg)
    assert not any(a.startswith("--served-model-name=") for a in engine_args(svc))
    plain = parse_stack_config(rt_cfg({"engine": "vllm", "image": OPENAI}), "p", "dev").services[0]
    assert f"--served-model-name={plain.name}" in engine_args(plain)

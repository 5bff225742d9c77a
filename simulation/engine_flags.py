"""The runtime flags and environment variables each model server reads, parsed the way it parses them: one reader
for the stack's load-time checks (stackconfig/runtimes.py), the rendered-flag check (manifests/inference_service.py
`repeated_flags`) and the simulation (simulation/isvc.py `server_from_manifest`), so all three see one value.

How each server reads its command line:
- vLLM's OpenAI server (image `vllm/vllm-openai`): `FlexibleArgumentParser.parse_args` reads `_` in a flag's name as
  `-` (vllm `utils.py`, later `utils/argparse_utils.py`); argparse keeps the last of a repeated flag.
- KServe's huggingfaceserver (engines `vllm` and `naive`): the same parser class, called through
  `parse_known_args` (huggingfaceserver `__main__.py`, v0.15–0.20), which skips that renaming and drops an unknown
  flag without a word. vLLM's flags are read there only with dashes (`--max-num-seqs`); KServe's own keep their
  underscores (`--model_name`, `--max_length`, `--max_model_len`, plain `int`s).
- TGI's launcher (clap, text-generation-inference v3.3.4 `launcher/src/main.rs`): kebab-case long flags, each also
  read from an environment variable of its name in upper case (`#[clap(long, env)]`); the flag wins over the
  variable; an unknown or repeated flag stops the launcher.
Values: vLLM's `human_readable_int` (`engine/arg_utils.py`) for `--max-model-len` and `--max-num-batched-tokens`:
'16k' = 16,000, '16K' = 16,384, '25.6k' = 25,600 (decimals only with the decimal suffixes k, m, g, t).

Flags are an allow-list: a flag is read when the simulation models it (mapped onto a `server:` key) or when it is
neutral (it changes neither GPU memory nor scheduling: names, ports, logging, chat templates, …). Any other flag —
`--dtype`, `--quantization`, `--kv-cache-dtype`, `--enforce-eager`, `--kv-cache-memory`, TGI's `--quantize` … — is
refused at load with the allowed ones, since the gate would simulate the default the flag replaces. Tensor
parallelism is the pod's GPU count (KServe's huggingfaceserver sets it to `torch.cuda.device_count()`,
`vllm/vllm_model.py`; TGI shards over every visible GPU, `find_num_shards`): a flag may only restate it.
Environment variables are a deny-list, since most (HF_TOKEN, NCCL_DEBUG) are no engine setting: the ones an engine
reads as a setting are mapped (`ENV_KEYS`) or refused (`REFUSED_ENV`). Triton's arguments are not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

VLLM_OPENAI, HF_VLLM, TGI = "vllm-openai", "huggingfaceserver", "tgi"
HF_TRANSFORMERS = "huggingfaceserver (Transformers)"
_HRI = re.compile(r"(\d+(?:\.\d+)?)([kmgtKMGT])")


def human_readable_int(text: str) -> int:
    """vLLM's `human_readable_int`: '16k' → 16000, '16K' → 16384, '2048' → 2048; ValueError otherwise."""
    text = text.strip()
    match = _HRI.fullmatch(text)
    if not match:
        return int(text)
    number, suffix = match.groups()
    if suffix.islower():
        return int(float(number) * 1000 ** ("kmgt".index(suffix) + 1))
    return int(number) * 1024 ** ("KMGT".index(suffix) + 1)   # int(): no decimals with a binary suffix


def _tokens(text: str) -> int:
    value = human_readable_int(text)
    if value < 1:   # newer vLLM's -1/'auto' fit max_model_len to the KV cache at start-up: not simulated
        raise ValueError
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError
    return value


def _wiggle(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise ValueError
    return value


def _v1(text: str) -> str:
    return "v1" if int(text) else "v0"


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError
    return text.lower() == "true"


@dataclass(frozen=True)
class Flag:
    key: str | None = None                          # the `server:` key it sets; None: neutral, or a TP flag
    parse: Callable[[str], Any] | None = None       # None: a switch that takes no value
    value: Any = True                               # what a switch sets `key` to
    expects: str = ""                               # the values it takes, for a message

    @property
    def takes_value(self) -> bool:
        return self.parse is not None


_TOKENS = Flag(parse=_tokens, expects="a number of tokens such as 8192 or 8k (vLLM's human_readable_int; 'auto' "
                                      "and -1, which newer vLLM fit to the KV cache, are not simulated)")
_INT = Flag(parse=_positive_int, expects="a whole number >= 1")
_VALUE, _SWITCH = Flag(parse=str), Flag()
TP_KEY, SHARDED_KEY = "tensor_parallel_size", "sharded"
_TP_KEYS = (TP_KEY, SHARDED_KEY)

# vLLM's engine and server flags (dash spelling), modelled ones first.
_VLLM = {
    "--max-model-len": Flag("max_model_len", _TOKENS.parse, expects=_TOKENS.expects),
    "--max-num-batched-tokens": Flag("max_num_batched_tokens", _TOKENS.parse, expects=_TOKENS.expects),
    "--max-num-seqs": Flag("max_num_seqs", _positive_int, expects=_INT.expects),
    "--gpu-memory-utilization": Flag("gpu_memory_utilization", _fraction, expects="a fraction in (0, 1]"),
    "--block-size": Flag("block_size", _positive_int, expects=_INT.expects),
    "--disable-custom-all-reduce": Flag("disable_custom_all_reduce"),
    "--no-disable-custom-all-reduce": Flag("disable_custom_all_reduce", value=False),
    "--no-enable-prefix-caching": Flag("prefix_cache_hit_ratio", value=0.0),
    "--tensor-parallel-size": Flag(TP_KEY, _positive_int, expects=_INT.expects),
    "-tp": Flag(TP_KEY, _positive_int, expects=_INT.expects),
    **{name: _VALUE for name in ("--model", "--served-model-name", "--port", "--host", "--tokenizer", "--revision",
                                 "--tokenizer-revision", "--tokenizer-mode", "--chat-template",
                                 "--chat-template-content-format", "--response-role", "--uvicorn-log-level",
                                 "--api-key", "--root-path", "--download-dir", "--seed", "--max-log-len",
                                 "--tool-call-parser", "--reasoning-parser", "--ssl-keyfile", "--ssl-certfile")},
    **{name: _SWITCH for name in ("--trust-remote-code", "--disable-log-requests", "--enable-log-requests",
                                  "--disable-log-stats", "--enable-auto-tool-choice", "--disable-fastapi-docs",
                                  "--enable-prompt-tokens-details", "--enable-prefix-caching")},   # V1's default
}
# KServe's huggingfaceserver's own flags (v0.15.2 `__main__.py`, `kserve/model_server.py`), as it spells them.
_KSERVE = {
    "--max_length": Flag("max_model_len", _positive_int, expects="a whole number of tokens (argparse type=int)"),
    "--max_model_len": Flag("max_model_len", _positive_int, expects="a whole number of tokens (argparse type=int)"),
    **{name: _VALUE for name in ("--model_name", "--model_dir", "--model_id", "--model_revision",
                                 "--tokenizer_revision", "--backend", "--tensor_input_names", "--http_port",
                                 "--grpc_port", "--enable_grpc", "--enable_docs_url", "--enable_latency_logging",
                                 "--configure_logging", "--log_config_file", "--access_log_format")},
    **{name: _SWITCH for name in ("--trust_remote_code", "--disable_log_requests", "--disable_lower_case",
                                  "--disable_special_tokens", "--return_token_type_ids", "--return_probabilities")},
}
# TGI's launcher flags; NUM_SHARD/SHARDED are its tensor parallelism.
_TGI = {
    "--max-batch-size": Flag("max_num_seqs", _positive_int, expects=_INT.expects),
    "--max-total-tokens": Flag("max_model_len", _positive_int, expects=_INT.expects),
    "--max-input-tokens": Flag("max_input_tokens", _positive_int, expects=_INT.expects),
    "--cuda-memory-fraction": Flag("gpu_memory_utilization", _fraction, expects="a fraction in (0, 1]"),
    "--max-concurrent-requests": Flag("max_concurrent_requests", _positive_int, expects=_INT.expects),
    "--max-batch-prefill-tokens": Flag("max_num_batched_tokens", _positive_int, expects=_INT.expects),
    "--num-shard": Flag(TP_KEY, _positive_int, expects=_INT.expects),
    "--sharded": Flag(SHARDED_KEY, _bool, expects="true or false"),
    **{name: _VALUE for name in ("--model-id", "--revision", "--port", "--hostname", "--validation-workers",
                                 "--max-best-of", "--max-stop-sequences", "--max-top-n-tokens", "--otlp-endpoint",
                                 "--otlp-service-name", "--cors-allow-origin", "--api-key", "--huggingface-hub-cache",
                                 "--weights-cache-override", "--tokenizer-config-path", "--usage-stats",
                                 "--payload-limit", "--prometheus-port", "--shard-uds-path", "--master-addr",
                                 "--master-port", "--graceful-termination-timeout", "--max-client-batch-size")},
    **{name: _SWITCH for name in ("--trust-remote-code", "--json-output", "--disable-grammar-support",
                                  "--enable-prefill-logprobs")},
}
FLAGS = {VLLM_OPENAI: _VLLM, HF_VLLM: {**_KSERVE, **_VLLM}, HF_TRANSFORMERS: _KSERVE, TGI: _TGI}

# Environment variables an engine reads as a setting: name → (server key, parser, what it takes).
ENV_KEYS = {
    "vllm": {"VLLM_USE_V1": ("scheduler", _v1, "0 or 1 (vllm envs.py reads bool(int(...)))")},
    "tgi": {**{flag[2:].replace("-", "_").upper(): (f.key, f.parse, f.expects) for flag, f in _TGI.items() if f.key},
            "TGI_WIGGLE_ROOM": ("wiggle_room", _wiggle, "a fraction in (0, 1) (server models/globals.py)")},
}
REFUSED_ENV = {
    "vllm": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "it lets --max-model-len exceed the model's context, which the "
                                              "simulation caps at the model's",
             "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "it changes the KV budget; state the measured CUDA-graph "
                                                         "memory as engineProfile.cudaGraphGib instead"},
    "tgi": {**{name: "the launcher reads it as its --" + name.lower().replace("_", "-") + ", which changes GPU "
               "memory or scheduling and is not simulated"
               for name in ("QUANTIZE", "SPECULATE", "DTYPE", "KV_CACHE_DTYPE", "MAX_INPUT_LENGTH",
                            "WAITING_SERVED_RATIO", "MAX_BATCH_TOTAL_TOKENS", "MAX_WAITING_TOKENS", "CUDA_GRAPHS",
                            "ROPE_SCALING", "ROPE_FACTOR", "DISABLE_CUSTOM_KERNELS", "LORA_ADAPTERS")},
            **{name: "the server reads it (models/globals.py) and it changes the KV cache or the schedule, which "
               "is not simulated" for name in ("ATTENTION", "PREFIX_CACHING", "PREFILL_CHUNKING")}},
}


def server_of(engine: str, image: str | None) -> str | None:
    """The server that reads the args: TGI's launcher, vLLM's OpenAI server (image `vllm-openai`) or KServe's
    huggingfaceserver; None for Triton (not read)."""
    if engine == "tgi":
        return TGI
    if engine == "vllm":
        repo = (image or "").split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
        return VLLM_OPENAI if repo == "vllm-openai" else HF_VLLM
    return HF_TRANSFORMERS if engine == "naive" else None


def canonical(server: str | None, name: str) -> str:
    """The flag name as `server` looks it up: vLLM's OpenAI server reads `_` as `-`, the others read it as given."""
    return name.replace("_", "-") if server == VLLM_OPENAI and name.startswith("--") else name


def setting(server: str | None, name: str) -> str:
    """What a flag sets, for telling two spellings of one setting apart (the `server:` key, else the name)."""
    name = canonical(server, name)
    flag = FLAGS.get(server, {}).get(name)
    return flag.key if flag is not None and flag.key else name


@dataclass
class Reading:
    """What a server reads from its args (and env): `server:` values, tensor-parallel values, and refusals."""
    values: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)       # `server:` key → the arg as given (the last one)
    tp: list = field(default_factory=list)          # (TP_KEY or SHARDED_KEY, the arg as given, its value)
    problems: list = field(default_factory=list)    # (the arg as given, why)


def read_args(server: str | None, args: list[str] | tuple) -> Reading:
    """The flags `server` reads from `args` (argparse: the last of a repeated flag; clap: one refusal)."""
    out, table, seen = Reading(), FLAGS.get(server), set()
    if table is None:
        return out
    args, i = list(args), 0
    while i < len(args):
        arg = args[i]
        i += 1
        name, eq, text = arg.partition("=")
        if not arg.startswith("-"):
            out.problems.append((arg, "expected a flag: a value goes right after its flag (--flag=value or "
                                      "--flag value)"))
            continue
        flag = table.get(canonical(server, name))
        if flag is None:
            out.problems.append((arg, _unknown(server, name)))
            continue
        if flag.takes_value and not eq:
            if i >= len(args):
                out.problems.append((arg, f"expected a value after {name}: {flag.expects or 'a value'}"))
                continue
            text, arg = args[i], f"{arg} {args[i]}"
            i += 1
        if server == TGI and canonical(server, name) in seen:
            out.problems.append((arg, "expected each flag once: TGI's launcher (clap) refuses a repeated flag"))
        seen.add(canonical(server, name))
        if not flag.key:
            continue
        try:
            value = flag.parse(text) if flag.takes_value else flag.value
        except ValueError:
            out.problems.append((arg, f"expected {flag.expects}"))
            continue
        if flag.key in _TP_KEYS:
            out.tp.append((flag.key, arg, value))
        else:
            out.values[flag.key], out.given[flag.key] = value, arg
    return out


def read_env(engine: str, env: dict) -> Reading:
    """The environment variables `engine` reads as settings (mapped, or refused)."""
    out = Reading()
    for name, text in env.items():
        if name in REFUSED_ENV.get(engine, {}):
            out.problems.append((name, f"expected no {name}: {REFUSED_ENV[engine][name]}"))
        elif name in ENV_KEYS.get(engine, {}):
            key, parse, expects = ENV_KEYS[engine][name]
            try:
                value = parse(str(text))
            except ValueError:
                out.problems.append((name, f"expected {expects}"))
                continue
            if key in _TP_KEYS:
                out.tp.append((key, f"{name}={text}", value))
            else:
                out.values[key] = value
    return out


def engine_settings(engine: str, image: str | None, args: Any, env: dict) -> dict:
    """The `server:` keys the runtime's environment and flags set (a flag over its variable, as clap resolves
    them); refused or unreadable entries are left out (the stack refuses them at load), and so is tensor parallelism
    (the pod's GPU count)."""
    return {**read_env(engine, env).values, **read_args(server_of(engine, image), tuple(args)).values}


def _unknown(server: str | None, name: str) -> str:
    table, dashed = FLAGS[server], name.replace("_", "-")
    if server == HF_VLLM and dashed in table:
        return (f"expected {dashed}: KServe's huggingfaceserver parses its flags with parse_known_args, which reads "
                f"vLLM's flags only with dashes and drops {name} without a word (huggingfaceserver __main__.py)")
    if server == TGI and dashed in table:
        return f"expected {dashed}: TGI's launcher (clap) knows no other spelling and refuses this one at start-up"
    modelled = sorted(n for n, f in table.items() if f.key)
    neutral = sorted(n for n, f in table.items() if not f.key)
    return (f"expected a flag {server} reads that the simulation models ({', '.join(modelled)}) or one that "
            f"changes neither GPU memory nor scheduling ({', '.join(neutral)}): the gate would simulate the default "
            "this flag replaces")


def tensor_parallel_problems(server: str | None, reading: Reading, gpus: int) -> list[tuple[str, str]]:
    """Tensor-parallel flags or variables that do not restate the pod's GPU count (module docstring)."""
    why = {HF_VLLM: "KServe's huggingfaceserver ignores it and runs vLLM with tensor parallelism = the pod's GPU "
                    "count (torch.cuda.device_count(), huggingfaceserver vllm/vllm_model.py start_engine)",
           VLLM_OPENAI: "vLLM's own server needs one visible GPU per tensor-parallel worker and cannot start more "
                        "workers than the pod's GPUs; the gate simulates tensor parallelism = resources.gpus",
           TGI: "TGI's launcher starts one shard per --num-shard and fails with more shards than visible GPUs; "
                "the gate simulates one shard per GPU of the pod"}.get(server, "")
    out = []
    for key, arg, value in reading.tp:
        if key == TP_KEY and value != gpus:
            out.append((arg, f"expected {gpus} (resources.gpus) or no such setting: {why}"))
        elif key == SHARDED_KEY and value != (gpus > 1):
            out.append((arg, f"expected {str(gpus > 1).lower()} with {gpus} GPU(s), or no such setting: TGI's "
                             "launcher shards over every visible GPU by default (find_num_shards); sharded true needs "
                             "more than one, false runs a single shard"))
    return out

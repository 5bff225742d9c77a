"""The flag tables `simulation/engine_flags.py` reads with: each server's flags, what they set and how their values
are parsed (sources and rules: that module's docstring; the value parsers: simulation/engine_flag_values.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from simulation.engine_flag_values import (at_least, between, choice, clap_bool, device_list, every_address, exactly,
                                           one_of, port_number, rust_float, rust_uint, swap_gib, tgi_hostname, tokens,
                                           vllm_use_v1)
from simulation.pod_ports import HTTP_PORT

VLLM_OPENAI, HF_VLLM, TGI = "vllm-openai", "huggingfaceserver", "tgi"
HF_TRANSFORMERS = "huggingfaceserver (Transformers)"
TP_KEY, SHARDED_KEY, CHUNKED_KEY = "tensor_parallel_size", "sharded", "chunked_prefill"
VISIBLE_KEY, SWAP_KEY, BLOCK_KEY = "visible_devices", "swap_space", "block_size"
# Settings checked against the pod or the simulated scheduler (engine_flags.py), never passed to the simulation.
RESTATED_KEYS = (TP_KEY, SHARDED_KEY, CHUNKED_KEY, VISIBLE_KEY, SWAP_KEY)
# vLLM's `--block-size` choices (argparse choices from `BlockSize`, vllm config/cache.py: 1, 8, 16, 32, 64, 128
# in 0.8.5 through 0.11.0; 0.11.1 adds 256, which the 0.11.0 image refuses: not accepted), and the ones each
# engine starts with on the catalog's GPUs (compute capability >= 8.0): V1's default FlashAttention backend raises
# "Block size must be a multiple of 16" (v1/attention/backends/flash_attn.py); V0 falls back from FlashAttention to
# xFormers below a multiple of 16, whose paged-attention kernel takes 8, 16 or 32 ("Unsupported block size",
# csrc/attention/paged_attention_v1.cu).
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128)
STARTABLE_BLOCK_SIZES = {"v1": (16, 32, 64, 128), "v0": (8, 16, 32, 64, 128)}
DEFAULT_SWAP_SPACE_GIB = 4.0   # vLLM's --swap-space default (CacheConfig.swap_space)


@dataclass(frozen=True)
class Flag:
    key: str | None = None                          # the `server:` key it sets; None: neutral
    parse: Callable[[str], Any] | None = None       # None: a switch that takes no value
    value: Any = True                               # what a switch sets `key` to
    expects: str = ""                               # the values it takes, for a message
    repeatable: bool = False                        # TGI: clap appends a repeated Vec flag instead of refusing it
    listens: bool = False                           # a port the server listens on beside HTTP (`taken_ports`)
    refusal: str = ""                               # the server takes it, the simulation does not model it: why
    since: tuple | None = None                      # vllm-openai: the first vLLM release with this flag
    until: tuple | None = None                      # vllm-openai: the release that removed it
    instead: str = ""                               # what to give there instead (`until`)

    @property
    def takes_value(self) -> bool:
        return self.parse is not None


def _typed(parse: Callable[[str], Any], expects: str, key: str | None = None) -> Flag:
    return Flag(key, parse, expects=expects)


_VLLM_TAG = re.compile(r":v?(\d+)\.(\d+)")


def vllm_release(image: str | None) -> tuple[int, int] | None:
    """The vLLM release a `vllm/vllm-openai` image's tag names (`:v0.11.0` → (0, 11)); None without one (then the
    newest is assumed, as the stack's V0 check does)."""
    match = _VLLM_TAG.search((image or "").split("@", 1)[0])
    return (int(match.group(1)), int(match.group(2))) if match else None


def version_problem(name: str, flag: Flag, image: str | None) -> str | None:
    """Why vLLM's own server (`image`) refuses `flag` at start-up, being too old or too new for it, else None: its
    argparse stops at an unrecognized argument."""
    release = vllm_release(image)
    shown = f"{image} names no vLLM version (the newest is assumed)" if release is None else \
        f"{image} runs vLLM {release[0]}.{release[1]}"
    if flag.until and (release is None or release >= flag.until):
        return (f"expected no {name}: {shown}, and vLLM {flag.until[0]}.{flag.until[1]} removed this flag; its "
                f"argparse stops at an unrecognized argument, so the server does not start. {flag.instead}")
    if flag.since and release is not None and release < flag.since:
        return (f"expected no {name}: {shown}, which has no such flag (added in {flag.since[0]}.{flag.since[1]}); "
                "its argparse stops at an unrecognized argument, so the server does not start")
    return None


_TOKENS = "a number of tokens such as 8192 or 8k (vLLM's human_readable_int; 'auto' and -1, which newer vLLM fit " \
          "to the KV cache, are not simulated)"
_PY_INT = at_least(1, int)
_INT = "a whole number >= 1"
_ARGPARSE_INT = _typed(int, "a whole number (argparse type=int)")
_RUST = "in ASCII digits (TGI's launcher: Rust's FromStr takes no '_', spaces or other digits)"
_USIZE = _typed(at_least(0, rust_uint), f"a whole number >= 0 {_RUST}")
_PORT = _typed(lambda t: rust_uint(t, 16), f"a port, 0 to 65535 {_RUST}")
_FRACTION = "a fraction in (0, 1] (TGI's launcher: Rust's f32 FromStr takes no '_', spaces or non-ASCII digits)"
_VALUE, _SWITCH = Flag(parse=str), Flag()
_FREE_PORT = "a port, 0 to 65535, the pod does not already use"


def _listener(read: Callable[[str], int], expects: str) -> Flag:
    return Flag(parse=port_number(read), expects=expects, listens=True)


# `--dtype`: the values that keep 2 bytes a weight and KV element, as the simulation sizes the catalog's models
# (vLLM `ModelConfig` dtype: auto is the checkpoint's, half = float16; KServe's huggingfaceserver turns auto into
# float16 on a GPU); float32 would double both, which is not simulated.
_DTYPE = "auto, half, float16 or bfloat16 (2 bytes a weight and KV element, as simulated; float32 is not)"
_EVERY_ADDRESS = ("0.0.0.0 or :: (every address): the probes and the raw Service reach the pod IP, Knative's "
                  "queue-proxy 127.0.0.1, and a server listening on one address misses the other")

# vLLM's engine and server flags (dash spelling), modelled ones first.
_VLLM = {
    "--max-model-len": Flag("max_model_len", tokens, expects=_TOKENS),
    "--max-num-batched-tokens": Flag("max_num_batched_tokens", tokens, expects=_TOKENS),
    "--max-num-seqs": Flag("max_num_seqs", _PY_INT, expects=_INT),
    "--gpu-memory-utilization": Flag("gpu_memory_utilization", between(float, 0, 1), expects="a fraction in (0, 1]"),
    "--block-size": Flag(BLOCK_KEY, one_of(int, VLLM_BLOCK_SIZES), expects=f"one of "
                         f"{', '.join(map(str, VLLM_BLOCK_SIZES))} (vLLM's argparse choices through 0.11.0, the "
                         "default image's; 0.11.1's 256 is not accepted)"),
    "--swap-space": Flag(SWAP_KEY, swap_gib, expects="GiB of CPU swap space per GPU, a number >= 0"),
    "--dtype": _typed(choice("auto", "half", "float16", "bfloat16"), _DTYPE),
    "--kv-cache-dtype": _typed(choice("auto"), "auto (the model's dtype; an fp8 KV cache holds twice the tokens, "
                               "which is not simulated)"),
    "--disable-custom-all-reduce": Flag("disable_custom_all_reduce"),
    "--no-disable-custom-all-reduce": Flag("disable_custom_all_reduce", value=False),
    "--no-enable-prefix-caching": Flag("prefix_cache_hit_ratio", value=0.0),
    "--enable-chunked-prefill": Flag(CHUNKED_KEY), "--no-enable-chunked-prefill": Flag(CHUNKED_KEY, value=False),
    "--tensor-parallel-size": Flag(TP_KEY, _PY_INT, expects=_INT),
    "-tp": Flag(TP_KEY, _PY_INT, expects=_INT),
    **{name: _ARGPARSE_INT for name in ("--port", "--seed", "--max-log-len")},
    "--distributed-executor-backend": _typed(choice("mp", "ray"), "mp or ray (one pod, one node: 'uni' runs a "
                                             "single worker, 'external_launcher' needs torchrun)"),
    **{name: _VALUE for name in ("--model", "--served-model-name", "--host", "--tokenizer", "--revision",
                                 "--tokenizer-revision", "--tokenizer-mode", "--chat-template",
                                 "--chat-template-content-format", "--response-role", "--uvicorn-log-level",
                                 "--api-key", "--root-path", "--download-dir", "--tool-call-parser",
                                 "--reasoning-parser", "--ssl-keyfile", "--ssl-certfile", "--allowed-origins",
                                 "--allowed-methods", "--allowed-headers", "--otlp-traces-endpoint",
                                 "--generation-config")},
    **{name: _SWITCH for name in ("--trust-remote-code", "--disable-log-requests", "--enable-log-requests",
                                  "--disable-log-stats", "--enable-auto-tool-choice", "--disable-fastapi-docs",
                                  "--enable-prompt-tokens-details", "--enable-prefix-caching",   # V1's default
                                  "--disable-uvicorn-access-log", "--allow-credentials")},
}
# Flags the server takes that change what the simulation models, refused with their reason (`Flag.refusal`), and
# common neutral ones with the values vLLM's argparse takes (`choices`): vLLM 0.8.5 (KServe 0.15's) to 0.11.0 (the
# default vllm-openai image), docs.vllm.ai v0.8.5 serving/engine_args, v0.10.1 and v0.11.0 configuration/engine_args.
_NOT_SIMULATED = "which the simulation does not model"
_GUIDED = ("auto", "xgrammar", "guidance", "outlines")   # every release with the flag; 0.10 dropped lm-format-enforcer
_VLLM_CHOSEN = {
    # `--load-format`: the checkpoint's own 16-bit weights, as the catalog sizes them and the cold start reads them.
    "--load-format": _typed(choice("auto", "pt", "safetensors"), "auto, pt or safetensors (the checkpoint's weights, "
                            "as the catalog sizes them and the cold start reads them); bitsandbytes and gguf "
                            "quantize the weights in GPU memory, dummy loads none, and runai_streamer, "
                            "fastsafetensors, tensorizer, sharded_state, npcache change how fast they load, "
                            f"{_NOT_SIMULATED}"),
    # `--task` (deprecated in 0.10 for --runner/--convert, still read in 0.11): the catalog's LLMs generate.
    "--task": _typed(choice("auto", "generate"), "auto or generate (the catalog's LLMs generate text); embedding, "
                     f"embed, classify, score, reward, transcription and draft run a pooling or other runner, "
                     f"{_NOT_SIMULATED}"),
    # Structured outputs: the backend only serves requests that ask for a grammar, neutral for the others. Removed
    # in vLLM 0.11 (vllm#22772: --structured-outputs-config.backend), which the default vllm-openai image runs.
    "--guided-decoding-backend": Flag(parse=choice(*_GUIDED), until=(0, 11), expects=f"{', '.join(_GUIDED)} (the "
                                      "choices of every vLLM with this flag, 0.8.5 to 0.10)",
                                      instead="Use --structured-outputs-config.backend=<backend> there"),
    "--structured-outputs-config.backend": Flag(parse=choice(*_GUIDED, "lm-format-enforcer"), since=(0, 11),
                                                expects=f"{', '.join(_GUIDED)} or lm-format-enforcer"),
    "--scheduling-policy": _typed(choice("fcfs"), "fcfs (vLLM's default, first come first served, as simulated); "
                                  "priority orders the queue by each request's priority, "
                                  f"{_NOT_SIMULATED}"),
    "--pipeline-parallel-size": _typed(exactly(int, 1), "1 (no pipeline parallelism): the gate simulates the pod's "
                                       "GPUs as tensor-parallel shards (resources.gpus); pipeline stages split the "
                                       f"layers and their KV cache across GPUs, {_NOT_SIMULATED}"),
    "-pp": _typed(exactly(int, 1), "1 (it is --pipeline-parallel-size): the gate simulates the pod's GPUs as "
                  "tensor-parallel shards; pipeline stages are not modelled"),
    "--max-num-partial-prefills": _typed(exactly(int, 1), "1 (vLLM's default: one prompt prefilled in chunks at a "
                                         "time, as simulated); more run several partial prefills at once, "
                                         f"{_NOT_SIMULATED}"),
    "--long-prefill-token-threshold": _typed(exactly(int, 0), "0 (vLLM's default with one partial prefill: a "
                                             "prompt's chunk is bounded by the step's token budget alone, as "
                                             f"simulated); a threshold caps long prompts' chunks, {_NOT_SIMULATED}"),
    "--max-logprobs": _ARGPARSE_INT,
}
_VLLM_REFUSED = {
    "--enforce-eager": Flag(refusal="it runs every step without CUDA graphs: decode steps take longer (each kernel "
                            "launched from Python) and no graph memory is reserved, while the simulation's step "
                            "times are those of vLLM's default CUDA-graph mode (state measured graph memory as "
                            "engineProfile.cudaGraphGib); eager mode's speed is not modelled. Remove it"),
    "--quantization": Flag(parse=str, refusal="quantized weights take less GPU memory and run other kernels than the "
                           "16-bit weights the catalog sizes and the simulation times; neither is modelled. Remove it "
                           "(a quantized checkpoint is not simulated either)"),
    "-q": Flag(parse=str, refusal="it is --quantization: quantized weights take less GPU memory and run other "
               f"kernels than the 16-bit weights the catalog sizes, {_NOT_SIMULATED}. Remove it"),
    "--enable-lora": Flag(refusal="LoRA reserves GPU memory for --max-loras adapters and runs extra kernels each "
                          f"step, {_NOT_SIMULATED}. Serve the merged model instead"),
    "--limit-mm-per-prompt": Flag(parse=str, refusal="it sizes multimodal inputs (the encoder's profiling memory "
                                  "and cache, image tokens), which are not simulated. Remove it"),
    "--disable-sliding-window": Flag(refusal="it caps the context at the model's sliding window and gives every "
                                     "layer full attention, while the simulation sizes the KV cache with the "
                                     "model's window. Remove it"),
    "--compilation-config": Flag(parse=str, refusal="it changes torch.compile and the CUDA-graph capture sizes, and "
                                 "with them step times and graph memory; the simulation times vLLM's default. Remove "
                                 "it"),
    "-O": Flag(parse=str, refusal="it is --compilation-config (the optimization level): it changes torch.compile "
               "and CUDA-graph capture, and with them step times and graph memory; the simulation times vLLM's "
               "default. Remove it"),
    "--max-seq-len-to-capture": Flag(parse=str, refusal="it changes which steps run as CUDA graphs, and so step "
                                     f"times and graph memory, {_NOT_SIMULATED}. Remove it"),
    "--cpu-offload-gb": Flag(parse=str, refusal="offloaded weights are read from host memory every step, slowing "
                             f"it and freeing GPU memory for the KV cache, {_NOT_SIMULATED}. Remove it"),
    "--speculative-config": Flag(parse=str, refusal="speculative decoding loads a draft model and changes tokens "
                                 f"per step, {_NOT_SIMULATED}. Remove it"),
    "--num-gpu-blocks-override": Flag(parse=str, refusal="it replaces the KV cache size the simulation computes "
                                      "from GPU memory. Remove it, or set gpuMemoryUtilization"),
}
# vLLM's own server (`vllm/vllm-openai`) listens where `--host` says; KServe's huggingfaceserver reads and ignores
# vLLM's `--host` and `--port` (its server is KServe's, on --http_port).
_VLLM_SERVER = {"--host": _typed(every_address, _EVERY_ADDRESS)}
# KServe's huggingfaceserver's own flags (v0.15.2 `__main__.py`, `kserve/model_server.py`), as it spells them.
_KSERVE = {
    "--max_length": Flag("max_model_len", _PY_INT, expects="a whole number of tokens (argparse type=int)"),
    "--max_model_len": Flag("max_model_len", _PY_INT, expects="a whole number of tokens (argparse type=int)"),
    "--http_port": _typed(exactly(int, HTTP_PORT), f"{HTTP_PORT}, KServe's default: the port the probes, Knative's "
                          "queue-proxy and the raw Service reach the server on; on another it never turns Ready"),
    "--dtype": _typed(choice("auto", "half", "float16", "bfloat16"), _DTYPE),
    "--grpc_port": _listener(int, f"{_FREE_PORT} (KServe's model server starts gRPC by default, --enable_grpc, "
                             "on 8081)"),
    **{name: _VALUE for name in ("--model_name", "--model_dir", "--model_id", "--model_revision",
                                 "--tokenizer_revision", "--backend", "--tensor_input_names", "--enable_grpc",
                                 "--enable_docs_url", "--enable_latency_logging", "--configure_logging",
                                 "--log_config_file", "--access_log_format")},
    **{name: _SWITCH for name in ("--trust_remote_code", "--disable_log_requests", "--disable_lower_case",
                                  "--disable_special_tokens", "--return_token_type_ids", "--return_probabilities")},
}
# TGI's launcher flags (v3.3.4 `launcher/src/main.rs` `struct Args`, types as declared); NUM_SHARD/SHARDED are its
# tensor parallelism; `--max-input-length` is the legacy name of `--max-input-tokens` (both set: it refuses).
_TGI_TOKENS = at_least(1, rust_uint)
_TGI = {
    "--max-batch-size": _typed(_TGI_TOKENS, f"{_INT} {_RUST}", "max_num_seqs"),
    "--max-total-tokens": _typed(_TGI_TOKENS, f"{_INT} {_RUST}", "max_model_len"),
    "--max-input-tokens": _typed(_TGI_TOKENS, f"{_INT} {_RUST}", "max_input_tokens"),
    "--max-input-length": _typed(_TGI_TOKENS, f"{_INT} {_RUST}", "max_input_tokens"),
    "--cuda-memory-fraction": _typed(between(rust_float, 0, 1), _FRACTION, "gpu_memory_utilization"),
    "--max-concurrent-requests": _typed(_TGI_TOKENS, f"{_INT} {_RUST}", "max_concurrent_requests"),
    "--max-batch-prefill-tokens": _typed(at_least(1, lambda t: rust_uint(t, 32)), f"{_INT}, a u32, {_RUST}",
                                         "max_num_batched_tokens"),
    "--num-shard": _typed(_TGI_TOKENS, f"{_INT} {_RUST}", TP_KEY),
    "--sharded": _typed(clap_bool, "true or false, in lower case (clap's bool parser)", SHARDED_KEY),
    "--port": _PORT,
    "--dtype": _typed(choice("float16", "bfloat16"), "float16 or bfloat16 (the launcher's value enum; 2 bytes a "
                      "weight, as simulated)"),
    **{name: _listener(lambda t: rust_uint(t, 16), f"{_FREE_PORT} {_RUST}") for name in ("--prometheus-port",
                                                                                         "--master-port")},
    "--hostname": _typed(tgi_hostname, f"{_EVERY_ADDRESS} (a name that is no IP address falls back to 0.0.0.0)"),
    "--validation-workers": _typed(_TGI_TOKENS, f"{_INT} {_RUST} (main.rs: 'validation_workers must be > 0')"),
    "--max-top-n-tokens": _typed(lambda t: rust_uint(t, 32), f"a whole number >= 0, a u32, {_RUST}"),
    **{name: _USIZE for name in ("--max-best-of", "--max-stop-sequences",
                                 "--graceful-termination-timeout", "--max-client-batch-size", "--payload-limit")},
    "--usage-stats": _typed(choice("on", "off", "no-stack"), "on, off or no-stack"),
    "--cors-allow-origin": Flag(parse=str, repeatable=True),
    **{name: _VALUE for name in ("--model-id", "--revision", "--otlp-endpoint", "--otlp-service-name",
                                 "--api-key", "--huggingface-hub-cache", "--weights-cache-override",
                                 "--tokenizer-config-path", "--shard-uds-path", "--master-addr")},
    **{name: _SWITCH for name in ("--trust-remote-code", "--json-output", "--disable-grammar-support",
                                  "--enable-prefill-logprobs", "--env")},
}
_VLLM.update({**_VLLM_CHOSEN, **_VLLM_REFUSED})
FLAGS = {VLLM_OPENAI: {**_VLLM, **_VLLM_SERVER}, HF_VLLM: {**_KSERVE, **_VLLM}, HF_TRANSFORMERS: _KSERVE, TGI: _TGI}
# Short forms (clap `short`: the field's first letter). TGI 3.3.4 gives `-p` to both --port and --prometheus-port;
# clap's release build (no debug asserts) takes the first declared, --port.
ALIASES = {TGI: {"-p": "--port", "-e": "--env", "-g": "--graceful-termination-timeout"}}

# Environment variables an engine reads as a setting: name → (server key, parser, what it takes); a None key is
# only checked. CUDA_VISIBLE_DEVICES may only name every GPU of the pod (engine_flags.tensor_parallel_problems).
_VISIBLE = {"CUDA_VISIBLE_DEVICES": (VISIBLE_KEY, device_list, "device indices")}
def _env_name(flag: str) -> str:
    return flag[2:].replace("-", "_").upper()


# The variables that set a listener's port (TGI's PROMETHEUS_PORT and MASTER_PORT), held to `taken_ports` too.
LISTENING_ENV = {"tgi": {_env_name(flag) for flag, f in _TGI.items() if f.listens}}
ENV_KEYS = {
    "vllm": {"VLLM_USE_V1": ("scheduler", vllm_use_v1, "0 or 1 (vllm envs.py reads bool(int(...)))"), **_VISIBLE},
    "naive": _VISIBLE,
    "tgi": {**{_env_name(flag): (f.key, f.parse, f.expects) for flag, f in _TGI.items()
               if (f.key or f.listens or flag in ("--hostname", "--dtype")) and flag != "--max-input-length"},
            "TGI_WIGGLE_ROOM": ("wiggle_room", between(float, 0, 1, high_open=True),
                                "a fraction in (0, 1) (server models/globals.py)"), **_VISIBLE},
}
# The NVIDIA device plugin gives the container the GPUs it allocated as NVIDIA_VISIBLE_DEVICES (its default
# `envvar` strategy, internal/plugin/server.go Allocate); the pod's own value replaces that list (or, with the
# plugin's volume-mounts strategy, is ignored), so the server would see GPUs other than the pod's.
_NVIDIA_VISIBLE = {"NVIDIA_VISIBLE_DEVICES": "the NVIDIA device plugin sets it to the GPUs it allocated to the pod "
                                             "(Allocate); the pod's own value replaces that list, so the server "
                                             "sees other GPUs of the node, or fewer, than resources.gpus, which the "
                                             "gate simulates (KServe's huggingfaceserver runs tensor parallelism = "
                                             "torch.cuda.device_count(); TGI's launcher counts this variable, "
                                             "num_cuda_devices)"}
REFUSED_ENV = {
    "naive": _NVIDIA_VISIBLE,
    "vllm": {**_NVIDIA_VISIBLE,
             "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "it lets --max-model-len exceed the model's context, which the "
                                              "simulation caps at the model's",
             "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "it changes the KV budget; state the measured CUDA-graph "
                                                         "memory as engineProfile.cudaGraphGib instead"},
    "tgi": {**_NVIDIA_VISIBLE,
            **{name: "the launcher reads it as its --" + name.lower().replace("_", "-") + ", which changes GPU "
               "memory or scheduling and is not simulated"
               for name in ("QUANTIZE", "SPECULATE", "KV_CACHE_DTYPE", "WAITING_SERVED_RATIO",
                            "MAX_BATCH_TOTAL_TOKENS", "MAX_WAITING_TOKENS", "CUDA_GRAPHS", "ROPE_SCALING",
                            "ROPE_FACTOR", "DISABLE_CUSTOM_KERNELS", "LORA_ADAPTERS")},
            "MAX_INPUT_LENGTH": "it is the launcher's legacy name of MAX_INPUT_TOKENS, and the launcher refuses to "
                                "start when both it and --max-input-tokens (which the stack renders from "
                                "limits.maxInputTokens) are set; use limits.maxInputTokens or MAX_INPUT_TOKENS",
            **{name: "the server reads it (models/globals.py) and it changes the KV cache or the schedule, which "
               "is not simulated" for name in ("ATTENTION", "PREFIX_CACHING", "PREFILL_CHUNKING")}},
}

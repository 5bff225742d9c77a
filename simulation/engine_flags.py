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
`vllm/vllm_model.py`; TGI shards over every visible GPU, `find_num_shards`): a flag may only restate it, and so
may vLLM's chunked-prefill switches (the scheduler the gate simulates: V1 chunks, V0 does not). A switch takes no
`=value` (argparse: 'ignored explicit argument'; clap: 'unexpected value'). TGI's values are parsed as clap parses
them (`engine_flag_tables.py`, with the tables: ASCII digits, the type's range); a neutral flag is type-checked too,
and one that places the server (KServe's `--http_port`/`--grpc_port`, vLLM's own server's `--host`, TGI's
`--hostname`/`--prometheus-port`/`--master-port`) takes only values that keep it on every address at port 8080,
clear of the queue-proxy's ports (`TAKEN_PORTS`). `--block-size` and `--swap-space` are checked against the
scheduler and the node (`restated_problems`).
Environment variables are a deny-list, since most (HF_TOKEN, NCCL_DEBUG) are no engine setting: the ones an engine
reads as a setting are mapped (`ENV_KEYS`) or refused (`REFUSED_ENV`: NVIDIA_VISIBLE_DEVICES, the device plugin's);
CUDA_VISIBLE_DEVICES may only name every GPU of the pod. Triton's arguments (tritonserver's getopt_long command
line, version-dependent) are read by `engine_flags_triton.py`: refusals only, no `server:` key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulation.engine_flag_tables import (  # noqa: F401 (names the other modules import from here)
    ALIASES, BLOCK_KEY, CHUNKED_KEY, DEFAULT_SWAP_SPACE_GIB, ENV_KEYS, FLAGS, HF_TRANSFORMERS, HF_VLLM, REFUSED_ENV,
    RESTATED_KEYS, SHARDED_KEY, STARTABLE_BLOCK_SIZES, SWAP_KEY, TGI, TP_KEY, VISIBLE_KEY, VLLM_OPENAI,
    human_readable_int)
from simulation.engine_flags_triton import TRITON, triton_problems


def image_repository(image: str) -> str:
    """`ghcr.io/huggingface/text-generation-inference:3.3.4@sha256:…` → `text-generation-inference` (the last path
    component, without tag or digest): which server an image runs, whatever registry mirrors it."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def server_of(engine: str, image: str | None) -> str | None:
    """The server that reads the args: TGI's launcher, vLLM's OpenAI server (image `vllm-openai`), KServe's
    huggingfaceserver or Triton."""
    if engine == "tgi":
        return TGI
    if engine == "vllm":
        return VLLM_OPENAI if image_repository(image or "") == "vllm-openai" else HF_VLLM
    if engine == "triton":
        return TRITON
    return HF_TRANSFORMERS if engine == "naive" else None


def canonical(server: str | None, name: str) -> str:
    """The flag name as `server` looks it up: vLLM's OpenAI server reads `_` as `-`, TGI's short forms are their
    long flag (`ALIASES`), the others read it as given."""
    if server == VLLM_OPENAI and name.startswith("--"):
        return name.replace("_", "-")
    return ALIASES.get(server, {}).get(name, name)


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
    tp: list = field(default_factory=list)          # (a RESTATED_KEYS key, the arg as given, its value)
    problems: list = field(default_factory=list)    # (the arg as given, why)


def read_args(server: str | None, args: list[str] | tuple, image: str | None = None) -> Reading:
    """The flags `server` reads from `args` (argparse: the last of a repeated flag; clap: one refusal); Triton's
    (`image` says which release) give refusals only."""
    out, table, seen = Reading(), FLAGS.get(server), set()
    if server == TRITON:
        return Reading(problems=triton_problems(args, image))
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
            if not eq and i < len(args) and not args[i].startswith("-"):   # its value, if it takes one: one problem
                arg, i = f"{arg} {args[i]}", i + 1
            out.problems.append((arg, _unknown(server, name)))
            continue
        if eq and not flag.takes_value:
            out.problems.append((arg, f"expected {name} alone: a switch takes no value (argparse's store_true and "
                                      "BooleanOptionalAction: 'ignored explicit argument'; clap: 'unexpected "
                                      "value'), so the server refuses to start"))
            continue
        if flag.takes_value and not eq:
            if i >= len(args):
                out.problems.append((arg, f"expected a value after {name}: {flag.expects or 'a value'}"))
                continue
            text, arg = args[i], f"{arg} {args[i]}"
            i += 1
        if server == TGI and canonical(server, name) in seen and not flag.repeatable:
            out.problems.append((arg, "expected each flag once: TGI's launcher (clap) refuses a repeated flag"))
        elif server == TGI and flag.key in out.given:
            out.problems.append((arg, f"expected one of {out.given[flag.key].split('=')[0].split()[0]} and {name}: "
                                      "TGI's launcher refuses to start when both are set (main.rs: max_input_length "
                                      "is the legacy name of max_input_tokens)"))
        seen.add(canonical(server, name))
        try:
            value = flag.parse(text) if flag.takes_value else flag.value
        except ValueError:
            out.problems.append((arg, f"expected {flag.expects}"))
            continue
        if not flag.key:
            continue
        if flag.key in RESTATED_KEYS:
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
            if key in RESTATED_KEYS:
                out.tp.append((key, f"{name}={text}", value))
            elif key is not None:
                out.values[key] = value
    return out


def engine_settings(engine: str, image: str | None, args: Any, env: dict) -> dict:
    """The `server:` keys the runtime's environment and flags set (a flag over its variable, as clap resolves
    them); refused or unreadable entries are left out (the stack refuses them at load), and so is tensor parallelism
    (the pod's GPU count)."""
    return {**read_env(engine, env).values, **read_args(server_of(engine, image), tuple(args), image).values}


def flag_problems(server: str | None, reading: Reading, env_reading: Reading, env: dict,
                  gpus: int) -> list[tuple[str | None, Any, str]]:
    """(None for an arg or the variable's name, the value, why): the flags `server` refuses or the simulation does
    not model, and tensor parallelism in the args or the environment other than the pod's GPU count."""
    out: list[tuple[str | None, Any, str]] = [(None, arg, why) for arg, why in
                                              reading.problems + tensor_parallel_problems(server, reading, gpus)]
    for arg, why in tensor_parallel_problems(server, env_reading, gpus):
        name = arg.split("=", 1)[0]
        out.append((name, env.get(name), why))
    return out


def manifest_problems(engine: str, image: str | None, args: Any, env: dict,
                      gpus: int) -> list[tuple[str, Any, str]]:
    """(`args` or `env[NAME]`, the value, why) for what a manifest's server refuses or the simulation would not model:
    `flag_problems` and the engine settings in the environment it refuses (`read_env`). The stack refuses the same
    at load (stackconfig/runtimes.py); a scenario's own manifest gets them here, since `engine_settings` leaves them
    out of the simulation."""
    server = server_of(engine, image)
    reading, env_reading = read_args(server, tuple(args), image), read_env(engine, env)
    out = [("args" if name is None else f"env[{name}]", value, why)
           for name, value, why in flag_problems(server, reading, env_reading, env, gpus)]
    return out + [(f"env[{name}]", env[name], why) for name, why in env_reading.problems]


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
        if key == VISIBLE_KEY and (len(value) != gpus or set(value) != {str(i) for i in range(gpus)}):
            every = ",".join(map(str, range(gpus)))
            out.append((arg, f"expected no CUDA_VISIBLE_DEVICES, or {every} (each of the pod's {gpus} GPU(s) once): "
                             "the NVIDIA device plugin already shows the pod its own GPUs and no others; a shorter "
                             "list hides GPUs the pod holds and an unknown index or UUID leaves it none. KServe's "
                             "huggingfaceserver runs vLLM with tensor parallelism = torch.cuda.device_count() "
                             "(vllm_model.py), TGI's launcher starts one shard per device this variable names "
                             "(num_cuda_devices), vLLM's own server cannot start more workers than it shows, while "
                             "the gate simulates one shard per GPU of resources.gpus"))
        elif key == TP_KEY and value != gpus:
            out.append((arg, f"expected {gpus} (resources.gpus) or no such setting: {why}"))
        elif key == SHARDED_KEY and value != (gpus > 1):
            out.append((arg, f"expected {str(gpus > 1).lower()} with {gpus} GPU(s), or no such setting: TGI's "
                             "launcher shards over every visible GPU by default (find_num_shards); sharded true needs "
                             "more than one, false runs a single shard"))
    return out


def restated_problems(reading: Reading, scheduler: str, env: dict, gpus: int = 1,
                      node_memory_gib: float | None = None) -> list[tuple[str, str]]:
    """A chunked-prefill switch that turns V1's off (V1 always chunks; on V0 whether it chunks depends on the
    context, so the stack loader checks V0's switches where it knows it: stackconfig/services.py), a `--block-size` the scheduler's attention backend cannot start with (`STARTABLE_BLOCK_SIZES`),
    a `--swap-space` the engine refuses or spends pod memory on, and TGI's `--max-input-length` beside a
    MAX_INPUT_TOKENS variable (the launcher refuses both).

    `--swap-space`: every vLLM refuses to start when it times the tensor-parallel size exceeds 0.7 × the node's
    memory (`CacheConfig.verify_with_parallel_config`; psutil's total, the node's, not the pod's limit, a little
    under the instance's nominal memory, `node_memory_gib`). V1 allocates nothing for it (no CPU swap: it
    preempts by recompute), so below that it changes nothing simulated; V0 pins that much host memory per GPU at
    start (worker.py `num_cpu_blocks`), so there it may only stay at or under the default 4 GiB."""
    out = []
    block = reading.values.get(BLOCK_KEY)
    startable = STARTABLE_BLOCK_SIZES.get(scheduler, ())
    if block is not None and block not in startable:
        why = ("V1's default attention backend on these GPUs (FlashAttention) raises 'Block size must be a multiple "
               "of 16'" if scheduler == "v1" else "V0 runs a block size that is no multiple of 16 on xFormers, "
               "whose paged-attention kernel takes 8, 16 or 32 ('Unsupported block size')")
        out.append((reading.given[BLOCK_KEY], f"expected one of {', '.join(map(str, startable))} with the "
                                              f"{scheduler} engine: {why}, so vLLM does not start"))
    for key, arg, value in reading.tp:
        if key == CHUNKED_KEY and scheduler == "v1" and not value:
            out.append((arg, f"expected no {arg}: the gate simulates the v1 scheduler with chunked prefill (vLLM V1 "
                             "chunks by default; simulation/gpu/vllm.py), and the other is not modelled"))
        elif key == SWAP_KEY and node_memory_gib and value * gpus > 0.7 * node_memory_gib:
            out.append((arg, f"expected at most {0.7 * node_memory_gib / gpus:g} GiB: vLLM refuses to start when "
                             f"--swap-space × {gpus} GPU(s) exceeds 0.7 × the node's {node_memory_gib:g} GiB of "
                             "memory ('Too large swap space', CacheConfig.verify_with_parallel_config)"))
        elif key == SWAP_KEY and scheduler == "v0" and value > DEFAULT_SWAP_SPACE_GIB:
            out.append((arg, f"expected at most {DEFAULT_SWAP_SPACE_GIB:g} (vLLM's default) with the v0 engine: V0 "
                             "pins --swap-space GiB of host memory per GPU at start (worker.py num_cpu_blocks), "
                             "charged to the pod's memory limit, and swaps preempted requests there, neither of which "
                             "the v0 simulation models beyond the default (V1 allocates none)"))
    given = reading.given.get("max_input_tokens", "")
    if given.startswith("--max-input-length") and "MAX_INPUT_TOKENS" in env:
        out.append((given, "expected --max-input-tokens, or no MAX_INPUT_TOKENS in runtime.env: TGI's launcher "
                           "refuses to start when both max_input_tokens and its legacy max_input_length are set"))
    return out

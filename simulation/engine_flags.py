"""The runtime flags and environment variables each model server reads, parsed the way it parses them: one reader
for the stack's load-time checks (stackconfig/runtimes.py; beside the flags the stack renders itself,
stackconfig/server_args.py) and the simulation (simulation/isvc.py `server_from_manifest`), so both see one value.

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
neutral (it changes neither GPU memory nor scheduling: names, ports, logging, chat templates, `--load-format`
safetensors, `--task generate` …; a value that would change them is refused, e.g. `--dtype float32`). Flags vLLM
takes that change what is simulated (`--enforce-eager`, `--quantization`, `--enable-lora` …) are refused with their
reason (`Flag.refusal`), a flag vLLM's own image is too old or too new for by its tag (`Flag.since`/`until`,
`version_problem`), and any other flag (`--kv-cache-memory`, TGI's `--quantize` …) with the allowed ones, since the
gate would simulate the default the flag replaces. Tensor
parallelism is the pod's GPU count (KServe's huggingfaceserver sets it to `torch.cuda.device_count()`,
`vllm/vllm_model.py`; TGI shards over every visible GPU, `find_num_shards`): a flag may only restate it, and so
may vLLM's chunked-prefill switches (the scheduler the gate simulates: V1 chunks, V0 does not). A switch takes no
`=value` (argparse: 'ignored explicit argument'; clap: 'unexpected value'). TGI's values are parsed as clap parses
them (`engine_flag_values.py`: ASCII digits, the type's range); a neutral flag is type-checked too, and one that
places the server (KServe's `--http_port`/`--grpc_port`, vLLM's own server's `--host`, TGI's
`--hostname`/`--prometheus-port`/`--master-port`, Triton's `--grpc-port`) takes only values that keep it on every
address at port 8080, and a second listener off the ports the pod already uses: 8080, and the queue-proxy's in
Knative mode (`pod_ports.taken_ports`; the `Pod` says which mode). `--block-size`, `--swap-space` and vLLM's
chunked-prefill switches are checked against the scheduler, the context and the node (`restated_problems`).
Environment variables are a deny-list, since most (HF_TOKEN, NCCL_DEBUG) are no engine setting: the ones an engine
reads as a setting are mapped (`ENV_KEYS`) or refused (`REFUSED_ENV`: NVIDIA_VISIBLE_DEVICES, the device plugin's);
CUDA_VISIBLE_DEVICES may only name every GPU of the pod. Triton's arguments (tritonserver's getopt_long command
line, version-dependent) are read by `engine_flags_triton.py`: refusals only, no `server:` key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalog.allocatable import capacity_memory_mib
from simulation.engine_flag_tables import (
    ALIASES, BLOCK_KEY, CHUNKED_KEY, DEFAULT_SWAP_SPACE_GIB, ENV_KEYS, FLAGS, HF_TRANSFORMERS, HF_VLLM, LISTENING_ENV,
    REFUSED_ENV, RESTATED_KEYS, SHARDED_KEY, STARTABLE_BLOCK_SIZES, SWAP_KEY, TGI, TP_KEY, VISIBLE_KEY, VLLM_OPENAI,
    version_problem)
from simulation.engine_flags_triton import triton_reading
from simulation.gpu.vllm_spec import SCHEDULERS, v0_chunks
from simulation.pod_ports import port_problem
from simulation.triton_flag_table import TRITON


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
    given: dict = field(default_factory=dict)       # `server:` key → the arg as given (the last one), or the variable
    tp: list = field(default_factory=list)          # (a RESTATED_KEYS key, the arg as given, its value)
    problems: list = field(default_factory=list)    # (the arg as given, why)
    ports: list = field(default_factory=list)       # (the arg or variable as given, a port it listens on)


@dataclass(frozen=True)
class Pod:
    """What a server's flags are checked against beyond the flags themselves: the pod's GPUs and deployment mode
    (Knative runs a queue-proxy beside the server, Standard does not: `taken_ports`), the vLLM engine the gate
    simulates (`vllm_scheduler`), the model and the context the server runs with (`max_model_len` as the manifest
    renders it; None: the model's), and psutil's total memory on the node (`node_memory_gib`)."""
    gpus: int
    mode: str
    scheduler: str = "v1"
    model: Any = None
    max_model_len: int | None = None
    node_memory_gib: float | None = None


def vllm_scheduler(env: dict, profile_scheduler: Any = None) -> str:
    """The vLLM engine the gate simulates: `engineProfile.scheduler` (a scenario's `server: scheduler`) over the
    manifest's VLLM_USE_V1 (the stack refuses the two disagreeing), else V1, vLLM's default."""
    if profile_scheduler in SCHEDULERS:
        return profile_scheduler
    return read_env("vllm", env).values.get("scheduler") or "v1"


def node_memory_gib(instances: Any) -> float | None:
    """psutil's total memory (the kernel's MemTotal, what vLLM bounds --swap-space by) on the smallest of these
    instance types, as the catalog estimates it (`catalog.allocatable.capacity_memory_mib`); None without one."""
    mib = [capacity_memory_mib(inst) for inst in instances if inst is not None]
    return min(mib) / 1024 if mib else None


def read_args(server: str | None, args: list[str] | tuple, image: str | None = None) -> Reading:
    """The flags `server` reads from `args` (argparse: the last of a repeated flag; clap: one refusal); Triton's
    (`image` says which release) give refusals only."""
    out, table, seen = Reading(), FLAGS.get(server), set()
    if server == TRITON:
        problems, ports = triton_reading(args, image)
        return Reading(problems=problems, ports=ports)
    if table is None:
        return out
    args, i = list(args), 0
    while i < len(args):
        arg = args[i]
        i += 1
        name, eq, text = arg.partition("=")
        if server in (VLLM_OPENAI, HF_VLLM) and arg.startswith("-O") and len(arg) > 2 and arg[2] != "=":
            name, eq, text = "-O", "=", arg[2:]    # argparse's attached short value: -O3 is -O 3
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
        if flag.refusal:
            out.problems.append((arg, f"expected no {name}: {flag.refusal}"))
            continue
        if server == VLLM_OPENAI and (why := version_problem(name, flag, image)):
            out.problems.append((arg, why))
            continue
        if flag.listens:
            out.ports.append((arg, value))
        if not flag.key:
            continue
        if flag.key in RESTATED_KEYS:
            out.tp.append((flag.key, arg, value))
        else:
            out.values[flag.key], out.given[flag.key] = value, arg
    return out


def flag_entries(server: str | None, args: list[str] | tuple) -> list[tuple[str, Any, str]]:
    """(what it sets: `setting`, its value as `server` parses it or None when it does not parse, the arg as given
    with a separate value joined as `read_args` joins it) for each flag in `args`, in order."""
    table, out, args, i = FLAGS.get(server) or {}, [], list(args), 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-"):
            continue
        name, eq, text = arg.partition("=")
        flag = table.get(canonical(server, name))
        if flag is not None and flag.takes_value and not eq and i < len(args):
            text, arg = args[i], f"{arg} {args[i]}"
            i += 1
        try:
            value = (flag.parse(text) if flag.takes_value else flag.value) if flag is not None else text
        except ValueError:
            value = None
        out.append((setting(server, name), value, arg))
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
            if name in LISTENING_ENV.get(engine, ()):
                out.ports.append((name, value))
            if key in RESTATED_KEYS:
                out.tp.append((key, f"{name}={text}", value))
            elif key is not None:
                out.values[key], out.given[key] = value, name
    return out


def engine_settings(engine: str, image: str | None, args: Any, env: dict) -> dict:
    """The `server:` keys the runtime's environment and flags set (a flag over its variable, as clap resolves
    them); refused or unreadable entries are left out (the stack refuses them at load), and so is tensor parallelism
    (the pod's GPU count)."""
    return {**read_env(engine, env).values, **read_args(server_of(engine, image), tuple(args), image).values}


def flag_problems(server: str | None, reading: Reading, env_reading: Reading, env: dict,
                  pod: Pod) -> list[tuple[str | None, Any, str]]:
    """(None for an arg or the variable's name, the value, why): the flags `server` refuses or the simulation does
    not model, tensor parallelism in the args or the environment other than the pod's GPU count, and a listener on
    a port the pod already uses (`taken_ports`)."""
    out: list[tuple[str | None, Any, str]] = [
        (None, arg, why) for arg, why in
        reading.problems + tensor_parallel_problems(server, reading, pod.gpus) + _port_problems(reading, pod)]
    for arg, why in tensor_parallel_problems(server, env_reading, pod.gpus) + _port_problems(env_reading, pod):
        name = arg.split("=", 1)[0]
        out.append((name, env.get(name), why))
    return out


def _port_problems(reading: Reading, pod: Pod) -> list[tuple[str, str]]:
    return [why for arg, port in reading.ports if (why := port_problem(arg, port, pod.mode))]


def manifest_problems(engine: str, serving: Any, spec: Any = None) -> list[tuple[str, Any, str]]:
    """(`args` or `env[NAME]`, the value, why) for what a manifest's server refuses or the simulation would not model:
    `flag_problems`, the engine settings in the environment it refuses (`read_env`) and, once the scenario's server
    has parsed (`spec`: its scheduler, model and node), `restated_problems` at the context the manifest renders.
    `serving` is the manifest's `isvc.ServingSpec` (image, args, env, GPUs, deployment mode). The stack refuses the
    same at load (stackconfig/runtimes.py); a scenario's own manifest gets them here, since `engine_settings`
    leaves them out of the simulation."""
    server, env = server_of(engine, serving.image), dict(serving.env)
    reading, env_reading = read_args(server, tuple(serving.args), serving.image), read_env(engine, env)
    profile = getattr(spec, "profile", None)
    model = getattr(profile, "model", None)
    pod = Pod(serving.gpus, serving.mode, getattr(spec, "scheduler", "v1"), model,
              reading.values.get("max_model_len"), node_memory_gib([getattr(profile, "instance_type", None)]))
    out = [("args" if name is None else f"env[{name}]", value, why)
           for name, value, why in flag_problems(server, reading, env_reading, env, pod)]
    if spec is not None:
        out += [("args", arg, why) for arg, why in restated_problems(reading, env, pod)]
    return out + [(f"env[{name}]", env[name], why) for name, why in env_reading.problems]


def _unknown(server: str | None, name: str) -> str:
    table, dashed = FLAGS[server], name.replace("_", "-")
    if server == HF_VLLM and dashed in table:
        return (f"expected {dashed}: KServe's huggingfaceserver parses its flags with parse_known_args, which reads "
                f"vLLM's flags only with dashes and drops {name} without a word (huggingfaceserver __main__.py)")
    if server == TGI and dashed in table:
        return f"expected {dashed}: TGI's launcher (clap) knows no other spelling and refuses this one at start-up"
    modelled = sorted(n for n, f in table.items() if f.key)
    neutral = sorted(n for n, f in table.items() if not f.key and not f.refusal)
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


def restated_problems(reading: Reading, env: dict, pod: Pod) -> list[tuple[str, str]]:
    """What a server runs differently from what the gate simulates, or refuses, given the pod (`Pod`): a chunked-prefill
    switch other than the scheduler's at the context (`_chunking_problem`), a `--block-size` the scheduler's
    attention backend cannot start with (`STARTABLE_BLOCK_SIZES`), a `--swap-space` the engine refuses or spends pod
    memory on, and TGI's `--max-input-length` beside a MAX_INPUT_TOKENS variable (the launcher refuses both).

    `--swap-space`: every vLLM refuses to start when it times the tensor-parallel size exceeds 0.7 × the node's
    memory (`CacheConfig.verify_with_parallel_config`; psutil's total, the node's MemTotal, not the pod's limit:
    `node_memory_gib`). V1 allocates nothing for it (no CPU swap: it preempts by recompute), so below that it
    changes nothing simulated; V0 pins that much host memory per GPU at start (worker.py `num_cpu_blocks`), so
    there it may only stay at or under the default 4 GiB."""
    out, scheduler, gpus, node_gib = [], pod.scheduler, pod.gpus, pod.node_memory_gib
    block = reading.values.get(BLOCK_KEY)
    startable = STARTABLE_BLOCK_SIZES.get(scheduler, ())
    if block is not None and block not in startable:
        why = ("V1's default attention backend on these GPUs (FlashAttention) raises 'Block size must be a multiple "
               "of 16'" if scheduler == "v1" else "V0 runs a block size that is no multiple of 16 on xFormers, "
               "whose paged-attention kernel takes 8, 16 or 32 ('Unsupported block size')")
        out.append((reading.given[BLOCK_KEY], f"expected one of {', '.join(map(str, startable))} with the "
                                              f"{scheduler} engine: {why}, so vLLM does not start"))
    for key, arg, value in reading.tp:
        if key == CHUNKED_KEY and (why := _chunking_problem(arg, value, pod)):
            out.append((arg, why))
        elif key == SWAP_KEY and node_gib and value * gpus > 0.7 * node_gib:
            out.append((arg, f"expected at most {0.7 * node_gib / gpus:.1f} GiB: vLLM refuses to start when "
                             f"--swap-space × {gpus} GPU(s) exceeds 0.7 × the node's {node_gib:.1f} GiB of memory "
                             "(psutil's total, the kernel's MemTotal; 'Too large swap space', "
                             "CacheConfig.verify_with_parallel_config)"))
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


def _chunking_problem(arg: str, value: bool, pod: Pod) -> str | None:
    """Why a chunked-prefill switch runs an engine the gate does not simulate (None when it restates it): V1 always
    chunks; V0 chunks by default above a 32,768-token context (`vllm_spec.v0_chunks`) at the context the manifest
    renders (`Pod.max_model_len`, else the model's), so there `--no-enable-chunked-prefill` runs whole-context
    prefill and profiling, and at or below it `--enable-chunked-prefill` runs V0's chunked scheduler on a short
    context; neither is modelled."""
    if pod.scheduler == "v1":
        return None if value else (f"expected no {arg}: the gate simulates the v1 scheduler with chunked prefill "
                                   "(vLLM V1 chunks by default; simulation/gpu/vllm.py), and the other is not "
                                   "modelled")
    model = pod.model
    if pod.scheduler != "v0" or model is None or model.kind != "llm":
        return None
    max_len = pod.max_model_len or model.max_context
    chunked = v0_chunks(model, max_len)
    if chunked and not value:
        return (f"expected no {arg}: vLLM's V0 engine chunks prefills by default above a 32,768-token context "
                f"({model.name} at {max_len}; EngineArgs._set_default_args_v0), which is what the gate simulates; "
                "without chunking it prefills and profiles the whole context at once, which is not modelled. Lower "
                "the context (limits.maxInputTokens + maxNewTokens) to 32768 or less to run V0 unchunked")
    if value and not chunked:
        return (f"expected no {arg}: vLLM's V0 engine prefills whole prompts at a context of 32,768 tokens or less "
                f"({model.name} at {max_len}), which is what the gate simulates for V0; V0's chunked scheduler "
                "there is not modelled. Use the V1 engine (no VLLM_USE_V1=0), which chunks")
    return None

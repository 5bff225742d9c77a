"""The flags the stack renders from a service's settings (`stack_args`: the caps, gpuMemoryUtilization, the name,
port and model directory) ahead of the user's `runtime.args`, and the load-time check of a user's flag that sets
the same thing again (`check_rendered_flags`). manifests/inference_service.py puts `engine_args` in the container;
the simulation reads them back from there (simulation/isvc.py)."""

from __future__ import annotations

from simulation.engine_flags import RESTATED_KEYS, TGI, flag_entries, server_of, setting
from stackconfig.runtimes import is_custom_predictor, rendered_context
from stackconfig.types import InputCaps, ServiceConfig
from validation.defaults import MODEL_MOUNT, SERVING_PORT
from validation.fields import Section


def engine_args(svc: ServiceConfig) -> list[str]:
    """The stack's flags (`stack_args`), then the user's `runtime.args`."""
    return stack_args(svc) + list(svc.args)


def _flag(svc: ServiceConfig, arg: str) -> str:
    """What a flag sets, as the server reads its name (simulation/engine_flags.py: vLLM's own server reads `_` as
    `-`, huggingfaceserver's `--max_length`, `--max_model_len` and `--max-model-len` are one setting)."""
    return setting(server_of(svc.engine, svc.image), arg.split("=", 1)[0])


def _gives(svc: ServiceConfig, flag: str) -> bool:
    """Whether the user's `runtime.args` set `flag`'s setting."""
    name = setting(server_of(svc.engine, svc.image), flag)
    return any(a.startswith("-") and _flag(svc, a) == name for a in svc.args)


def stack_args(svc: ServiceConfig) -> list[str]:
    """Input, batch and memory caps as the runtime's own flags, the only place a runtime reads them.

    vLLM (engine args passed through KServe's huggingfaceserver, or vLLM's own OpenAI server as a custom
    predictor): `--max-model-len` (prompt + max_tokens above it is answered 400), `--max-num-seqs`; TGI launcher:
    `--max-input-tokens`, `--max-total-tokens` (default the model's context; must exceed the input cap),
    `--max-batch-size`, `--max-concurrent-requests`; the Transformers backend: `--max_length`, the whole context
    (huggingfaceserver `generative_model.py`: prompt + max_tokens above it is answered 400). Triton takes none
    (see TRITON_CAP_ANNOTATIONS). Without maxNewTokens, maxInputTokens is the whole context.
    """
    caps, args = svc.caps, []
    total = rendered_context(caps)   # the whole context: input + output, else the input cap
    custom = is_custom_predictor(svc.engine, svc.image)
    if svc.engine == "vllm":
        if custom:  # vllm/vllm-openai: `--model` (docs: Deploying with Docker), its port 8000 by default
            # served under the service's name unless runtime.args names it (the clients' `model`, often the HF id)
            served = [] if _gives(svc, "--served-model-name") else [f"--served-model-name={svc.name}"]
            args += [f"--model={MODEL_MOUNT}", *served, f"--port={SERVING_PORT}"]
            if svc.gpus > 1:  # KServe's huggingfaceserver sets it to the GPU count; vLLM's own server to 1
                args.append(f"--tensor-parallel-size={svc.gpus}")
        else:
            args += [f"--model_name={svc.name}", "--backend=vllm"]
        args.append(f"--gpu-memory-utilization={svc.gpu_memory_utilization:g}")
        if total:
            args.append(f"--max-model-len={total}")
        if caps.max_batch_size:
            args.append(f"--max-num-seqs={caps.max_batch_size}")
    elif svc.engine == "naive":  # plain Transformers backend: memory grows with what is in flight
        args += [f"--model_name={svc.name}", "--backend=huggingface"]
        if total:
            args.append(f"--max_length={total}")
    elif svc.engine == "tgi":  # text-generation-launcher, a custom predictor on the container port
        args += [f"--port={SERVING_PORT}", f"--model-id={MODEL_MOUNT}"]
        if caps.max_input_tokens:
            args.append(f"--max-input-tokens={caps.max_input_tokens}")
        if caps.max_input_tokens and caps.max_new_tokens:   # else the launcher's default (the model's context)
            args.append(f"--max-total-tokens={total}")
        if caps.max_batch_size:
            args.append(f"--max-batch-size={caps.max_batch_size}")
        if caps.max_concurrent_requests:
            args.append(f"--max-concurrent-requests={caps.max_concurrent_requests}")
    return args



def _rendered_from(key: str, caps: InputCaps) -> tuple[str, str]:
    """(the service setting the stack renders a flag of setting `key` from, manifests/inference_service.py
    `stack_args`; what to do instead of repeating it)."""
    context = "limits.maxInputTokens + limits.maxNewTokens" if caps.max_input_tokens and caps.max_new_tokens \
        else "limits.maxInputTokens"
    setting = {"max_model_len": context, "max_num_seqs": "limits.maxBatchSize",
               "gpu_memory_utilization": "gpuMemoryUtilization", "max_input_tokens": "limits.maxInputTokens",
               "max_concurrent_requests": "limits.maxConcurrentRequests"}.get(key)
    if setting:
        return setting, f"set {setting} instead"
    fixed = {"--port": f"the serving port ({SERVING_PORT}: the probes and the Service reach the server there)",
             "--model": f"the model directory ({MODEL_MOUNT}, filled from model.storageUri)",
             "--model-id": f"the model directory ({MODEL_MOUNT}, filled from model.storageUri)",
             "--model_name": "the service's name", "--served-model-name": "the service's name",
             "--backend": "runtime.engine"}.get(key, "the service's settings")
    return fixed, "remove it"


def check_rendered_flags(sec: Section, svc: ServiceConfig) -> None:
    """`runtime.args` flags that set what the stack already renders from the service's settings (`stack_args`:
    the caps, gpuMemoryUtilization, the name, port and model directory), at `runtime.args` with the arg as given.
    TGI's launcher refuses a repeated flag (clap) and max_input_length beside max_input_tokens (main.rs), so any
    repeat stops it; vLLM's and KServe's argparse keep the last one, the user's (after the stack's), so a repeat
    is refused only when its value differs: the server would run with it while the stack's checks, the advice and
    the gate's caps read the setting. Tensor parallelism is checked against the pod instead (`_check_engine_args`),
    and a value that does not parse is reported there once."""
    server = server_of(svc.engine, svc.image)
    ours = {key: (value, arg) for key, value, arg in flag_entries(server, stack_args(svc))}
    for key, value, arg in flag_entries(server, svc.args):
        if key not in ours or key in RESTATED_KEYS or value is None:
            continue
        stack_value, stack_arg = ours[key]
        source, fix = _rendered_from(key, svc.caps)
        if server == TGI:
            sec.problem("runtime.args", arg, f"expected no {arg.split('=')[0].split()[0]}: the stack renders "
                        f"{stack_arg} from {source}, and TGI's launcher refuses a setting given twice (clap: "
                        "'cannot be used multiple times'; main.rs: max_input_length beside max_input_tokens), so it "
                        f"does not start; {fix}")
        elif value != stack_value:
            sec.problem("runtime.args", arg, f"expected {stack_arg} or no such flag: the stack renders {stack_arg} "
                        f"from {source}, and the server's argparse keeps the last one given (this one), so it "
                        f"would run with {value}, not the {stack_value} the stack's checks and the gate read; {fix}")

"""Does each LLM server start on the GPUs it gets? vLLM sizes its KV cache at start-up and exits when one request of
`max_model_len` tokens does not fit it, or the weights and the profiling pass leave no room at all
(vllm/v1/core/kv_cache_utils.py `check_enough_kv_cache_memory`: "To serve at least one request with the models's
max seq len …, … KV cache is needed, which is larger than the available KV cache memory"); TGI's launcher does the
same with its `--max-total-tokens` and its warm-up batch. The pod crash-loops and the revision never becomes Ready,
so the stack refuses it at load, gate on or off, with the simulation's own start-up plan (`VllmBudget`, read from
the same rendered InferenceService and `engineProfile` as the gate: gate/scenario.py `scenario_for`). Whatever the
engine, the server settings the simulation's reader refuses (a vLLM step budget below --max-num-seqs, which vLLM
refuses at start-up; a catalog model it cannot size) are refused at load too, so a stack with the gate off is held to
them as well: each at the key of the stack file that set the server setting (`server_key`: a `runtime.args` flag or
`runtime.env` variable as the user wrote it, the `limits`, `resources.gpus`, `gpuMemoryUtilization`, `engineProfile` or
`catalog` key the stack renders it from), not at the simulation's `server.…` key the user never wrote."""

from __future__ import annotations

from typing import Any

from gate.scenario import scenario_for
from manifests.inference_service import engine_args
from simulation.engine_flags import read_args, read_env, server_of
from simulation.scenario import load_scenario
from stackconfig.engine_profile import KEYS, NAIVE_FLAGS
from stackconfig.load import ROOT, stack_file
from stackconfig.schema import ServiceConfig, StackConfig
from validation.errors import InputError, Problem

ENGINES = ("vllm", "tgi")
# Any workload: the server's start-up plan does not depend on it, and a service the gate does not check has none.
_PLACEHOLDER_WORKLOAD = {"kind": "poisson", "rate": 1.0}


def _server_spec(cfg: StackConfig, svc: ServiceConfig) -> tuple[Any, list[Problem]]:
    """The server spec the gate would simulate for `svc`, or None and the scenario reader's problems with its
    `server:` keys (those the server refuses to start with, e.g. vLLM's step budget below --max-num-seqs)."""
    scenario = scenario_for(cfg, svc)
    scenario["workload"] = scenario.get("workload") or _PLACEHOLDER_WORKLOAD
    try:
        return load_scenario(scenario, base_dir=ROOT).server.spec, []
    except InputError as err:   # the workload's own problems are the gate's, when it runs
        return None, [p for p in err.problems if p.path.split(".")[0].split("[")[0] == "server"]


def start_problems(cfg: StackConfig) -> list[Problem]:
    """One problem per service whose server would exit at start-up on its GPUs (vLLM or TGI: its start-up plan),
    or whose server settings the simulation's reader refuses (at the stack key that set them, `server_key`)."""
    problems = []
    for i, svc in enumerate(cfg.services):
        spec, refused = _server_spec(cfg, svc)
        problems += [server_key(cfg, i, p) for p in refused]
        budget = getattr(spec, "budget", None) if svc.engine in ENGINES else None
        if budget is None or budget.can_start:
            continue
        context = budget.num_blocks and budget.blocks_per_max_request > budget.num_blocks
        key, value, lower = _context_key(svc) if context else ("resources.gpus", svc.gpus, "")
        problems.append(Problem(f"services[{i}].{key}", value, (
            f"expected a server that starts: {svc.engine} on {svc.gpus} GPU(s) would exit at start-up "
            f"({budget.reason}), so the pod crash-loops and the revision never becomes Ready. {lower}"
            + ("raise gpuMemoryUtilization, " if svc.engine == "vllm" else "")
            + "give each replica more GPUs (resources.gpus) or use a GPU with more memory")))
    return problems


def _context_key(svc: ServiceConfig) -> tuple[str, Any, str]:
    """Where the service's max_model_len comes from (`runtimes.served_context`): a flag in `runtime.args`, the
    limits, or neither (the model's own context); the key, its value and how to lower it."""

    given = read_args(server_of(svc.engine, svc.image), tuple(svc.args), svc.image).given.get("max_model_len")
    if given:
        return "runtime.args", given, "Lower the context it gives, "
    if svc.caps.max_input_tokens:
        return ("limits", {"maxInputTokens": svc.caps.max_input_tokens, "maxNewTokens": svc.caps.max_new_tokens},
                "Lower limits.maxInputTokens + maxNewTokens (the max_model_len), ")
    return ("limits", None, f"Set limits.maxInputTokens and maxNewTokens below the model's own context, "
            f"{svc.model.max_context:,} tokens, which it runs with when they are unset, ")


def check_servers_start(cfg: StackConfig) -> None:
    """Raise InputError (key paths under the project namespace, as the loader's) when a server would not start."""
    problems = start_problems(cfg)
    if problems:
        raise InputError([Problem(f"{cfg.project}:{p.path}", p.value, p.allowed) for p in problems],
                         cfg.source or stack_file(cfg.stack))  # the file the loader read (stacks/ or --stack-dir)


# The server keys the stack renders from its own keys (manifests/inference_service.py stack_args, triton_caps, the
# GPU limit and the cluster): the stack key under services[i] (None: top level) and the ServiceConfig value.
def _rendered(svc: ServiceConfig) -> dict[str, tuple[str, Any]]:
    caps = svc.caps
    context = {"maxInputTokens": caps.max_input_tokens, "maxNewTokens": caps.max_new_tokens}
    out = {"max_model_len": ("limits", context), "max_input_tokens": ("limits.maxInputTokens", caps.max_input_tokens),
           "max_num_seqs": ("limits.maxBatchSize", caps.max_batch_size),
           "max_concurrent_requests": ("limits.maxConcurrentRequests", caps.max_concurrent_requests),
           "gpu_memory_utilization": ("gpuMemoryUtilization", svc.gpu_memory_utilization),
           "tensor_parallel_size": ("resources.gpus", svc.gpus), "model": ("model", svc.model.name)}
    if svc.engine == "triton":
        out.update({"max_batch_size": ("limits.maxBatchSize", caps.max_batch_size),
                    "max_pixels": ("limits.maxImagePixels", caps.max_image_pixels),
                    "max_queue_delay_microseconds": ("limits.maxQueueDelayMicroseconds", caps.max_queue_delay_us),
                    "max_queue_size": ("limits.maxQueueSize", caps.max_queue_size)})
    return out


def _sources(cfg: StackConfig, i: int) -> dict[str, tuple[str, Any]]:
    """Server key → (the stack key that sets it, the value there) for services[i]: engineProfile over the user's
    runtime.args over runtime.env over what the stack renders, as the gate's scenario reads them (a flag over its
    variable; the scenario's `server:`, engineProfile, over the manifest)."""
    svc, here = cfg.services[i], f"services[{i}]"
    out = {key: (f"{here}.{path}", value) for key, (path, value) in _rendered(svc).items()}
    out |= {"instance_type": ("gpuNodeGroup.instanceTypes", list(cfg.node_group.instance_types))}
    out |= {key: (f"{here}.runtime.env.{name}", svc.env.get(name))
            for key, name in read_env(svc.engine, dict(svc.env)).given.items()}
    reading = read_args(server_of(svc.engine, svc.image), tuple(engine_args(svc)), svc.image)
    out |= {key: (f"{here}.runtime.args", arg) for key, arg in reading.given.items() if arg in svc.args}
    names = {name: stack for stack, (name, *_) in KEYS.get(svc.engine, {}).items()}
    names |= {name: stack for stack, name in NAIVE_FLAGS.items()} | {k: k for k in ("scheduler", "oom", "generate")}
    out |= {key: (f"{here}.engineProfile.{names.get(key, key)}", value) for key, value in svc.engine_profile.items()}
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def server_key(cfg: StackConfig, i: int, problem: Problem) -> Problem:
    """A problem of the gate's scenario reader at `server.<key>` for services[i], at the stack key the user wrote
    (`_sources`), with its value there. A catalog field goes to `catalog.models.<name>.<field>`. A setting no key
    of the service sets (the server's default, e.g. vLLM's step budget) goes to the key that set a setting the
    reason names (`--max-num-seqs` for 'at least max_num_seqs'), else to `runtime.args`, where a flag would set
    it; the reason then says what the server's value was and where it came from."""
    head, _, key = problem.path.partition(".")
    if head != "server":
        return Problem(f"services[{i}]/{problem.path}", problem.value, problem.allowed)
    if key.startswith("catalog.models."):
        model, _, field = key[len("catalog.models."):].rpartition(".")
        return Problem(f"catalog.models.{model}.{_camel(field)}", problem.value, problem.allowed)
    sources = _sources(cfg, i)
    if key in sources and sources[key][1] is not None:
        path, value = sources[key]
        shown = "" if str(problem.value) in str(value) else f" (the server's {key}: {problem.value!r})"
        return Problem(path, value, problem.allowed + shown)
    origin = "its default: no key of this service sets it"
    named = [k for k in sources if k != key and sources[k][1] is not None and f"{k} (" in problem.allowed]
    if named:
        path, value = sources[named[0]]
        return Problem(path, value, f"expected a {named[0]} the server starts with: its {key} is {problem.value!r} "
                                    f"({origin}), and for {key} the server {problem.allowed}; or a flag in "
                                    f"runtime.args that sets {key}")
    return Problem(f"services[{i}].runtime.args", list(cfg.services[i].args),
                   f"expected a flag that sets the server's {key}, now {problem.value!r} ({origin}): for {key} the "
                   f"server {problem.allowed}")

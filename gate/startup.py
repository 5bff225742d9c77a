"""Does each LLM server start on the GPUs it gets? vLLM sizes its KV cache at start-up and exits when one request of
`max_model_len` tokens does not fit it, or the weights and the profiling pass leave no room at all
(vllm/v1/core/kv_cache_utils.py `check_enough_kv_cache_memory`: "To serve at least one request with the models's
max seq len …, … KV cache is needed, which is larger than the available KV cache memory"); TGI's launcher does the
same with its `--max-total-tokens` and its warm-up batch. The pod crash-loops and the revision never becomes Ready,
so the stack refuses it at load, gate on or off, with the simulation's own start-up plan (`VllmBudget`, read from
the same rendered InferenceService and `engineProfile` as the gate: `scenario_for`). Whatever the engine, the server
settings the simulation's reader refuses (a vLLM step budget below --max-num-seqs, which vLLM refuses at start-up;
a catalog model it cannot size) are refused at load too, at the gate's key path, so a stack with the gate off is
held to them as well."""

from __future__ import annotations

from typing import Any

from stackconfig.load import stack_file
from stackconfig.schema import ServiceConfig, StackConfig
from validation.errors import InputError, Problem

ENGINES = ("vllm", "tgi")
# Any workload: the server's start-up plan does not depend on it, and a service the gate does not check has none.
_PLACEHOLDER_WORKLOAD = {"kind": "poisson", "rate": 1.0}


def _server_spec(cfg: StackConfig, svc: ServiceConfig) -> tuple[Any, list[Problem]]:
    """The server spec the gate would simulate for `svc`, or None and the scenario reader's problems with its
    `server:` keys (those the server refuses to start with, e.g. vLLM's step budget below --max-num-seqs)."""
    from gate import ROOT, scenario_for
    from simulation.scenario import load_scenario

    scenario = scenario_for(cfg, svc)
    scenario["workload"] = scenario.get("workload") or _PLACEHOLDER_WORKLOAD
    try:
        return load_scenario(scenario, base_dir=ROOT).server.spec, []
    except InputError as err:   # the workload's own problems are the gate's, when it runs
        return None, [p for p in err.problems if p.path.split(".")[0].split("[")[0] == "server"]


def start_problems(cfg: StackConfig) -> list[Problem]:
    """One problem per service whose server would exit at start-up on its GPUs (vLLM or TGI: its start-up plan),
    or whose server settings the simulation's reader refuses (with the gate's key path, `services[i]/server.…`)."""
    problems = []
    for i, svc in enumerate(cfg.services):
        spec, refused = _server_spec(cfg, svc)
        problems += [Problem(f"services[{i}]/{p.path}", p.value, p.allowed) for p in refused]
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
    from simulation.engine_flags import read_args, server_of

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
                         stack_file(cfg.stack))

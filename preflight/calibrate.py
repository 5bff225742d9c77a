"""`python -m preflight calibrate vllm-log FILE | bench FILE`: measured engine figures for a stack's service.

Which model and GPU the measurement belongs to: `--stack NAME --service NAME` (the service's model, the node
group's GPU, its tensor parallelism and gpuMemoryUtilization), or `--model`/`--gpu`/`--tp`. The two ways are
exclusive: `--model`/`--gpu` with `--stack`/`--service` are refused (exit status 2), as is a `--tp` other than the
service's GPUs, rather than one silently winning. A vLLM log of another model or GPU is refused too
(simulation/calibrate/vllm_log.py check_log_fits): what is printed and written is always a profile that
reproduces the log on the target's model and GPU. The result is
printed as the service's `engineProfile:` to paste; `--write` (with `--stack`/`--service`) merges it into
the stack file, comments kept (stackconfig/stackfile.py). The figures themselves come from simulation/calibrate/;
the stack loader's own checks refuse any it would not load. `python -m simulation calibrate` is the same command.
See docs/gpu-model.md, "Calibrate". The stack modules are imported when used, so that registering the
command costs either CLI's start-up nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from catalog import DEFAULT, Catalog, Gpu, Model
from validation.errors import InputError, Problem
from validation.paths import open_regular


@dataclass(frozen=True)
class Target:
    model: Model
    gpu: Gpu
    tp: int
    utilization: float | None
    stack: str | None = None
    service: str | None = None
    engine: str = "vllm"  # the service's engine with --stack: which engineProfile keys it accepts
    catalog: Catalog = DEFAULT  # the stack's catalog (its own GPUs and models) with --stack

    @property
    def described(self) -> str:
        return f"service {self.service} of stack {self.stack}" if self.stack else ""


def add_parser(sub: Any) -> None:
    cal = sub.add_parser("calibrate", help="derive engineProfile figures from your own engine's log or benchmark")
    kinds = cal.add_subparsers(dest="source", required=True)
    for name, helptext in (("vllm-log", "a vLLM start-up log (memory profile, KV cache size)"),
                           ("bench", "a `vllm bench serve --save-result` JSON (TTFT, TPOT/ITL)")):
        p = kinds.add_parser(name, help=helptext)
        p.add_argument("file", help="the log / result file")
        p.add_argument("--stack", help="stack name (stacks/Pulumi.NAME.yaml) whose --service this measures")
        p.add_argument("--service", help="service name in that stack")
        p.add_argument("--model", help="catalog model (instead of --stack/--service; refused with them)")
        p.add_argument("--gpu", help="catalog GPU (instead of --stack/--service; refused with them)")
        p.add_argument("--tp", type=int, default=None, help="tensor parallel size (default: the service's GPUs "
                       "with --stack, where another is refused; else the log's, else 1)")
        p.add_argument("--gpu-memory-utilization", type=float, default=None, dest="utilization",
                       help="when the log does not state it")
        p.add_argument("--write", action="store_true", help="merge the result into the stack file")


def _ranges(args: Any) -> list[Problem]:
    """--tp and --gpu-memory-utilization, with or without --stack."""
    problems = []
    if args.tp is not None and not 1 <= args.tp <= 16:
        problems.append(Problem("--tp", args.tp, "expected 1..16"))
    if args.utilization is not None and not 0.05 <= args.utilization <= 1.0:  # NaN fails too
        problems.append(Problem("--gpu-memory-utilization", args.utilization, "expected 0.05..1.0"))
    return problems


def _target(args: Any) -> Target:
    problems = _ranges(args)
    if args.stack or args.service:
        if not (args.stack and args.service):
            problems.append(Problem("--stack/--service", args.stack or args.service, "expected both"))
        for flag, value, what in (("--model", args.model, "model"), ("--gpu", args.gpu, "node group's GPU")):
            if value is not None:  # once silently ignored: the file was calibrated for the service's instead
                problems.append(Problem(flag, value, f"expected no {flag} with --stack/--service: the service's "
                                        f"{what} is the one measured (leave out --stack/--service to calibrate for "
                                        "--model/--gpu)"))
        if problems:
            raise InputError(problems)
        from stackconfig.load import load_stack

        cfg = load_stack(args.stack)
        svc = next((s for s in cfg.services if s.name == args.service), None)
        if svc is None:
            raise InputError([Problem("--service", args.service, "expected one of "
                                      + ", ".join(s.name for s in cfg.services))])
        if args.tp is not None and args.tp != svc.gpus:  # the simulation runs the service at tp = its GPUs
            raise InputError([Problem("--tp", args.tp, f"expected {svc.gpus}, the tensor parallelism of service "
                                      f"{svc.name} (its resources.gpus), or no --tp")])
        return Target(svc.model, cfg.node_group.gpu, svc.gpus, args.utilization or svc.gpu_memory_utilization,
                      args.stack, args.service, svc.engine, cfg.catalog)
    if args.model not in DEFAULT.models:
        problems.append(Problem("--model", args.model,
                                "expected a catalog model: " + ", ".join(sorted(DEFAULT.models))))
    if args.gpu not in DEFAULT.gpus:
        problems.append(Problem("--gpu", args.gpu, "expected a catalog GPU: " + ", ".join(sorted(DEFAULT.gpus))))
    if args.write:
        problems.append(Problem("--write", True, "expected --stack and --service to say where to write"))
    if problems:
        raise InputError(problems)
    return Target(DEFAULT.models[args.model], DEFAULT.gpus[args.gpu], args.tp or 0, args.utilization)


MAX_INPUT_BYTES = 64 * 2**20  # a --save-detailed result of ~3 M inter-token latencies; a start-up log is KiBs


def _read(path: str) -> str:
    """The file's text (undecodable bytes replaced: a log may hold some): a regular file of at most
    MAX_INPUT_BYTES, read no further (validation/paths.py open_regular: a FIFO or a device is refused)."""
    try:
        with open_regular(path) as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as err:
        raise InputError([Problem("FILE", path, f"expected a readable file ({err.strerror or err})")]) from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError([Problem("FILE", path, f"expected a file of at most {MAX_INPUT_BYTES / 2**20:g} MiB (a "
                                  "vLLM start-up log or a `vllm bench serve` result)")])
    return data.decode("utf-8", errors="replace")


def run(args: Any, out: Any = None) -> int:
    from simulation.calibrate import from_bench, from_log

    out = out or sys.stdout
    t = _target(args)
    text = _read(args.file)
    if args.source == "vllm-log":
        profile, lines = from_log(text, t.model, t.gpu, t.tp, t.utilization, args.file, catalog=t.catalog,
                                  target=t.described)
    else:
        profile, lines = from_bench(text, t.model, t.gpu, t.tp, args.file)
    _check_profile(profile, t, args.file)  # what the stack loader would refuse is never printed or written
    for line in lines:
        out.write(f"# {line}\n")
    out.write("engineProfile:\n")
    for key, value in profile.items():
        out.write(f"  {key}: {value}\n")
    if args.write:
        from stackconfig.stackfile import write_engine_profile

        path = write_engine_profile(t.stack, t.service, profile)
        out.write(f"# written to {path} (services[{t.service}].engineProfile)\n")
    return 0


def _check_profile(profile: dict, t: Target, name: str) -> None:
    """The stack loader's own checks (stackconfig/engine_profile.py) on the derived figures, for the service's
    engine: a figure out of range (a measurement no engine gives, or the wrong --model/--gpu) is an InputError."""
    from stackconfig.engine_profile import parse_engine_profile
    from validation.fields import Section

    problems: list[Problem] = []
    parse_engine_profile(Section(profile, "engineProfile", problems), t.engine)
    if problems:
        raise InputError(problems, f"the figures derived from {name} (for {t.model.name} on {t.gpu.name}, engine "
                                   f"{t.engine}; check the file and --model/--gpu/--tp)")

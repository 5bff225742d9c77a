"""`python -m preflight whatif`: what a config change does (preflight/whatif.py), both sides simulated on common
random numbers.

    python -m preflight whatif --stack prod --set 'services.chat.containerConcurrency=8' [--set …]
        [--workload FILE | --rate-scale 2] [--against REV] [--service NAME] [--replications N] [--plot DIR] [--json]

Exit status: 0 when the after side meets every SLO, 1 when it misses one, 2 for a user's mistake.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from preflight import whatif
from preflight.whatif_tables import plot, tables
from stackconfig.load import ROOT
from stackconfig.schema import StackConfig
from validation.errors import InputError, Problem


def add_parser(sub: Any) -> None:
    from simulation.executors import add_executor_arguments

    cmd = sub.add_parser("whatif", help="simulate a config change against the stack as it is, on common random "
                                        "numbers, and show the difference")
    cmd.add_argument("--stack", default="dev", help="stack name (default: dev)")
    cmd.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE",
                     help="a config edit for the after side, e.g. services.chat.containerConcurrency=8 (repeatable)")
    cmd.add_argument("--against", metavar="REV", help="before = the stack file at this git revision")
    traffic = cmd.add_mutually_exclusive_group()
    traffic.add_argument("--workload", metavar="FILE", help="both sides under this workload (YAML, simulation format)")
    traffic.add_argument("--rate-scale", type=float, metavar="X", help="both sides at X × each workload's rate")
    cmd.add_argument("--service", action="append", help="compare only this service (repeatable)")
    cmd.add_argument("--replications", type=int, default=10,
                     help="replications per side for the paired difference (default 10; more when a side's verdict, "
                          "decided by the gate's own rule, took more)")
    cmd.add_argument("--plot", type=Path, metavar="DIR", help="write before/after overlay plots (PNG) to DIR")
    cmd.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    add_executor_arguments(cmd)


def _check_replications(replications: int, before: StackConfig, after: StackConfig) -> None:
    """`--replications` held to each side's gate.totalRequestBudget, as `gate.replications.max` is at load: a
    side simulates every scenario the gate runs max(--replications, the runs its verdict took) times."""
    from stackconfig.gate_runs import replications_problem

    problems = [problem for side, cfg in (("the before side", before), ("the after side", after))
                if (problem := replications_problem(cfg.services, cfg.gate, str(ROOT),
                                                    cfg.knative.autoscaler.enable_scale_to_zero, replications,
                                                    "--replications", f"{side} of stack {cfg.stack!r}"))]
    if problems:
        raise InputError(problems)


def run(args: Any) -> int:
    """The `whatif` subcommand; InputError for a user's mistake (the caller exits 2)."""
    import json
    import sys

    from rich.console import Console

    from simulation.executors import make_executor

    from validation.paths import check_output_dir

    if args.plot is not None:  # before anything is simulated
        check_output_dir("--plot", args.plot)
    if not 2 <= args.replications <= 1000:
        raise InputError([Problem("--replications", args.replications, "expected an integer between 2 and 1000")])
    executor = make_executor(args.dask, args.ray, args.workers)  # --workers checked before the stack is read
    console = Console(stderr=args.json, width=None if sys.stdout.isatty() else 150)
    try:
        before, after = whatif.sides(args.stack, args.sets, args.against, args.workload, args.rate_scale, args.service)
        _check_replications(args.replications, before, after)
        with console.status(f"simulating {args.stack}: before and after × {args.replications} replications"):
            result = whatif.compare(before, after, args.replications, executor, args.service, stack=args.stack,
                             against=args.against, sets=args.sets)
    finally:
        executor.close()
    if not result.comparisons:
        raise InputError([Problem("--stack", args.stack, "a stack with at least one service that declares a "
                                  "workload and an SLO on both sides")])
    if args.json:
        print(json.dumps(result.to_dict(), sort_keys=True))
    else:
        for table in tables(result):
            console.print(table)
        for side, keys in result.only.items():
            if keys:
                console.print(f"only {side}: {', '.join(keys)} (not compared)")
    if args.plot is not None:
        for path in plot(result, args.plot):
            console.print(f"plot written: {path}")
    return 0 if result.passed_after else 1

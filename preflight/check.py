"""`python -m preflight check --stack dev`: everything `pulumi up` would check, offline, in one report.

1. the stack config (typed, every mistake at once);
2. the admission webhooks' rules (Knative feature gates, KServe validation; validation/admission.py) on every
   rendered object, then the real Pulumi program under mocks: what it would register;
3. every Kubernetes manifest against its schema (kubernetes-validate strict, the InferenceService schema);
4. the policy rules (the same functions as the CrossGuard pack);
5. the SLO gate: each service simulated as deployed, against its SLO.

Exit status: 0 all clear, 1 a manifest, a mandatory policy or an SLO fails, 2 a user mistake (unknown stack, bad
config). `--json` prints one machine-readable object instead of tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from validation.errors import InputError, Problem, exit_with
from validation.cli import guarded
from validation.paths import check_output_dir
from gate import Verdict, start_check
from gate.verdict import STATUS_MARKUP, identical_runs
from simulation.executors import add_executor_arguments, make_executor
from preflight.stages import Timings, in_background
from stackconfig.load import load_stack, program_refusal, stack_names
from tuner.cli import add_arguments as add_tune_arguments, run as run_tuner


@dataclass
class StackCheck:
    stack: str
    resources: int = 0
    admission: list[str] = field(default_factory=list)  # what the cluster's webhooks would refuse
    rollout: list[str] = field(default_factory=list)  # rollouts that would not fit (gate/rollout_capacity.py)
    rollout_load: dict[str, str] = field(default_factory=dict)  # service → the load figure the rollout check used
    manifest_errors: list[str] = field(default_factory=list)
    violations: list = field(default_factory=list)  # policy.rules.Violation
    verdicts: list[Verdict] = field(default_factory=list)
    cfg: Any = None  # the parsed StackConfig, once loaded
    plots: list = field(default_factory=list)  # PNG paths written by --plot
    predictions: dict | None = None  # gate.outputs.predictions: the same object as the `predictions` stack output

    @property
    def mandatory(self) -> list:
        from policy.rules import MANDATORY

        return [v for v in self.violations if v.severity == MANDATORY and not v.waived]   # policyWaivers

    @property
    def passed(self) -> bool:
        return (not self.admission and not self.rollout and not self.manifest_errors and not self.mandatory
                and all(v.passed for v in self.verdicts))

    def to_dict(self) -> dict:
        return {
            "stack": self.stack, "passed": self.passed, "resources": self.resources,
            "admission": self.admission, "rollout": self.rollout, "rollout_load": self.rollout_load,
            "manifest_errors": self.manifest_errors,
            "policy": [{"rule": v.rule, "severity": v.severity, "resource": v.resource_name, "key": v.key,
                        "stack_file": v.stack_file, "service": v.service, "waived": v.waived, "message": v.message}
                       for v in self.violations],
            "slo": {v.service: {"passed": v.passed, "replications": v.replications,
                                "checks": [c.to_dict() for c in v.checks], "simulation": v.report}
                    for v in self.verdicts if v.scenario == "steady"},
            "stress": {f"{v.service}/{v.scenario}": {"passed": v.passed, "replications": v.replications,
                                                     "checks": [c.to_dict() for c in v.checks], "simulation": v.report}
                       for v in self.verdicts if v.scenario != "steady"},
            "predictions": self.predictions,
            "next": self.next_steps(),   # the lines the text ends with: the deploy command or the what-ifs to try
        }

    def next_steps(self) -> list[str]:
        """What to do next (preflight/advice.py `next_steps`), as the text report prints it."""
        from preflight.advice import next_steps

        return next_steps(self.cfg or load_stack(self.stack), self.verdicts, self.passed)


def check(stack: str, console: Console | None = None, plot_dir: Path | None = None, executor=None,
          timings: Timings | None = None, cache=None, stack_dir: Path | None = None) -> StackCheck:
    """Run every stage for one stack; raises InputError for a user's mistake.

    The SLO gate's simulations start first and run on the executor's workers beside the other stages
    (preflight/stages.py); `timings` collects each stage's time; `cache` (simulation/result_cache.py) answers
    the replications it holds. `stack_dir`: the folder of `Pulumi.<stack>.yaml` (default the project's `stacks/`).
    """
    timings = timings if timings is not None else Timings()
    with timings.stage(f"{stack}: config, node fit, admission"):
        from gate.startup import check_servers_start
        from manifests.admission import admission_problems, check_pods_can_run

        cfg = load_stack(stack, stack_dir=stack_dir)
        check_pods_can_run(cfg)
        check_servers_start(cfg)
        result = StackCheck(stack, admission=[str(r) for r in admission_problems(cfg)], cfg=cfg)
    if result.admission:  # the program would stop here too, before registering anything
        return result
    progress = _GateProgress(stack, console)
    gate = in_background(lambda: start_check(cfg, executor, progress.on_round, cache), executor, timings,
                         f"{stack}: SLO gate simulations") if cfg.gate.enabled else None
    with timings.stage(f"{stack}: Pulumi program under mocks (imports the providers)"):
        import pulumi

        from offline import run_program

        # The gate runs beside, with a progress bar and the full table, so the program skips it here; with the gate
        # on, the program's rollout check (at the static load) only warns: `result.rollout` below decides, on the
        # gate's estimate of each service's load, as `pulumi up` does.
        program_gate = {"enabled": False, "enforce": not cfg.gate.enabled}
        try:
            run = run_program(stack, edit=lambda c: c.__setitem__(f"{cfg.project}:gate", program_gate),
                              stack_dir=stack_dir)
        except pulumi.RunError as err:
            raise program_refusal(stack, err, stack_dir=stack_dir) from None
        result.resources = len(run.resources)
    with timings.stage(f"{stack}: manifest schemas"):
        from validation.kubernetes import validation_errors

        result.manifest_errors = [e for m in run.kubernetes_manifests()
                                  for e in validation_errors(m, cfg.cluster.kubernetes_version)]
    with timings.stage(f"{stack}: policies"):
        from policy.keys import stack_keys
        from policy.rules import evaluate
        from policy.stack import resources_from_run

        resources = resources_from_run(run, stack)
        result.violations = stack_keys(evaluate(resources), stack, stack_dir, resources)
    if gate is not None:
        with timings.stage(f"{stack}: SLO gate (waiting for the simulations)"):
            from gate.outputs import predictions

            with progress.shown():
                result.verdicts = gate.result()
            result.predictions = predictions(cfg, result.verdicts)
    from gate.rollout_capacity import capacity_problems, expected_loads

    result.rollout = [str(p) for p in capacity_problems(cfg, result.verdicts)]   # what `pulumi up` checks
    result.rollout_load = expected_loads(cfg, result.verdicts)[1]
    if plot_dir is not None:
        from gate.plots import plot_verdicts

        result.plots = plot_verdicts(stack, result.verdicts, plot_dir)
    return result


class _GateProgress:
    """A transient progress line while `check` waits for the gate: the (service, scenario) trials still open and
    the replication count of the latest round sent (each scenario moves on alone, gate/sequential.py)."""

    def __init__(self, stack: str, console: Console | None) -> None:
        self.console, self.text = console, f"simulating {stack}"
        self.stack, self._bar, self._task = stack, None, None

    def on_round(self, replications: int, trials: int) -> None:  # may run in the gate's waiting thread
        self.text = (f"simulating {self.stack}: {trials} service scenario(s) open, "
                     f"latest round to {replications} replications")
        if self._bar is not None:
            self._bar.update(self._task, description=self.text)

    @contextmanager
    def shown(self) -> Iterator[None]:
        from rich.progress import Progress

        with Progress(console=self.console, transient=True, disable=self.console is None) as bar:
            self._task = bar.add_task(self.text, total=None)
            self._bar = bar
            try:
                yield
            finally:
                self._bar = None


def _ok(flag: bool) -> str:
    return "[bold green]pass[/]" if flag else "[bold red]FAIL[/]"


def slo_table(stack: str, verdicts: list[Verdict]) -> Table:
    table = Table(title=f"stack {stack}: SLO gate ({verdicts[0].report['duration_s']:g} s simulated per replication)"
                  if verdicts else f"stack {stack}: SLO gate")
    for col in ("service", "replications", "check", "estimate", "95% CI", "SLO", ""):
        table.add_column(col)
    for v in verdicts:
        for i, c in enumerate(v.checks):
            ci = f"{c.ci95[0]:.3g}–{c.ci95[1]:.3g}" if c.ci95 else ""
            if identical_runs(c.estimate):
                ci = "none: identical runs"
            table.add_row(escape(v.label) if i == 0 else "", str(v.replications) if i == 0 else "",
                          escape(c.name + (f"\n  {c.note}" if c.note else "")),
                          "n/a" if c.observed is None else f"{c.observed:.4g}", ci, f"{c.limit:g}",
                          STATUS_MARKUP[c.status])
        table.add_section()
    return table


def print_result(result: StackCheck, console: Console) -> None:
    from policy.report import violations_table

    console.print(f"[bold]stack {result.stack}[/]: program registers {result.resources} resources offline")
    console.print(f"  admission: {_ok(not result.admission)}" + "".join(f"\n    - {e}" for e in result.admission))
    console.print(f"  rollout capacity: {_ok(not result.rollout)}"
                  + "".join(f"\n    - {escape(e)}" for e in result.rollout)
                  + ("" if result.rollout else "".join(f"\n    expected load of {escape(name)}: {escape(basis)}"
                                                       for name, basis in result.rollout_load.items())))
    console.print(f"  manifests: {_ok(not result.manifest_errors)}"
                  + "".join(f"\n    - {e}" for e in result.manifest_errors))
    console.print(f"  policies: {_ok(not result.mandatory)} ({len(result.mandatory)} mandatory, "
                  f"{len(result.violations) - len(result.mandatory)} advisory finding(s))")
    if result.violations:
        console.print(violations_table(result.stack, result.violations))
    if result.verdicts:
        console.print(slo_table(result.stack, result.verdicts))
        from preflight.summary import service_lines

        for v in result.verdicts:
            for line in service_lines(v):
                console.print("  " + line, markup=False, highlight=False)
    for path in result.plots:
        console.print(f"  plot written: {path}", markup=False, highlight=False)
    from preflight.summary import verdict_suffix

    console.print(f"{_ok(result.passed)} stack {result.stack}" + escape(verdict_suffix(result.cfg)))
    for line in result.next_steps():
        console.print(line, markup=False, highlight=False)


def _tune(args) -> int:
    try:
        executor = make_executor(args.dask, args.ray, args.workers)
    except InputError as err:
        exit_with(err)
    try:
        return run_tuner(args, executor)
    except InputError as err:
        exit_with(err)
    finally:
        executor.close()


@guarded
def main(argv: Sequence[str] | None = None, started: float | None = None) -> int:
    """The CLI; `started` is the perf_counter value when the process began importing (for --timings)."""
    parser = argparse.ArgumentParser(prog="python -m preflight", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("check", help="config, manifests, policies and the SLO gate for a stack, offline")
    cmd.add_argument("--stack", action="append", help="stack name (repeatable; default: dev)")
    cmd.add_argument("--stack-dir", type=Path, metavar="DIR",
                     help="read Pulumi.<stack>.yaml from DIR instead of this project's stacks/")
    cmd.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    cmd.add_argument("--plot", type=Path, metavar="DIR",
                     help="also write one timeline PNG per service to DIR: replicas and Pending pods, queue, errors "
                          "by status and component, GPU memory, latency (successes and all requests)")
    cmd.add_argument("--timings", action="store_true", help="also report how long each stage took")
    cmd.add_argument("--no-cache", action="store_true",
                     help="simulate every replication even when the on-disk cache of replication results "
                          "(keyed by the scenario, the seed and the simulator's source) holds it")
    cmd.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="where replication results are cached (default: $KSERVE_PREFLIGHT_CACHE_DIR or the "
                          "user's cache directory)")
    add_executor_arguments(cmd)
    from preflight import whatif_cli

    whatif_cli.add_parser(sub)
    tune = sub.add_parser("tune", help="search one service's settings for the cheapest that pass every gate scenario")
    add_tune_arguments(tune)
    add_executor_arguments(tune)
    from preflight import calibrate

    calibrate.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "tune":
        return _tune(args)
    if args.command == "calibrate":
        return calibrate.run(args)
    if args.command == "whatif":
        try:
            return whatif_cli.run(args)
        except InputError as err:
            exit_with(err)
    if args.plot is not None:  # before the gate runs, not after
        check_output_dir("--plot", args.plot)
    if args.cache_dir is not None and args.no_cache:  # named on purpose: refused, not silently unused
        exit_with(InputError([Problem("--no-cache/--cache-dir", f"--no-cache / {args.cache_dir}", "one or the "
                                      "other: --no-cache reads and writes no cache, so a --cache-dir would go "
                                      "unused")]))
    if args.cache_dir is not None:
        check_output_dir("--cache-dir", args.cache_dir)
    known = stack_names(stack_dir=args.stack_dir)
    stacks = args.stack or ["dev"]
    unknown = [s for s in stacks if s not in known]
    if unknown:
        exit_with(InputError([Problem("--stack", s, "expected one of " + ", ".join(known)) for s in unknown]))
    console = Console(stderr=args.json, width=None if sys.stdout.isatty() else 140)
    results = []
    timings = Timings(started)
    if started is not None:
        timings.add("imports (the CLI's modules)", time.perf_counter() - started, None)
    cache = None
    if not args.no_cache:
        from simulation.result_cache import ResultCache

        cache = ResultCache(args.cache_dir)
    try:
        executor = make_executor(args.dask, args.ray, args.workers)
    except InputError as err:
        exit_with(err)
    try:
        for stack in stacks:
            try:
                where = {} if args.stack_dir is None else {"stack_dir": args.stack_dir}
                results.append(check(stack, console, args.plot, executor, timings, cache, **where))
            except InputError as err:
                exit_with(err)
            if not args.json:
                print_result(results[-1], console)
    finally:
        executor.close()
    if cache is not None:
        timings.notes.append(f"replications from the cache: {cache.hits} of {cache.hits + cache.misses} "
                             f"({cache.dir}; --no-cache to simulate them all)")
        note = None if args.json else cache.note()   # one snapshot of the sources, one answer
        if note:  # a verdict from cached replications says so, without --timings
            console.print(escape(note), soft_wrap=True)
    if args.json:
        out = {"passed": all(r.passed for r in results), "stacks": [r.to_dict() for r in results],
               "cache": None if cache is None else cache.to_dict()}
        if args.timings:
            out["timings"] = timings.to_dict()
        print(json.dumps(out, sort_keys=True))
    elif args.timings:
        console.print(timings.table())
    return 0 if all(r.passed for r in results) else 1

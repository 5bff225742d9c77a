"""`python -m preflight tune --stack prod --service chat [--trials N] [--seed S]`: the cheapest settings that pass
every gate scenario, and pass it again on fresh seeds, as the edit to the stack file (tuner/search.py)."""

from __future__ import annotations

import json
import math
from typing import Any

from catalog.prices import PRICES, Price
from stackconfig.load import ROOT, project_values, stack_config_values, stack_names
from validation.errors import InputError, Problem
from tuner.edit import deploy_notes, stack_file_diff
from tuner.search import REJUDGE_MAX, Candidate, best, confirm, pareto, space_size, tune
from tuner.space import KNOBS, changed

SEED_MAX = 2**32 - 1  # optuna's TPESampler seeds numpy's RandomState: 0 … 2**32 − 1
PRICE_MAX = 1000.0    # $/h per node; the dearest EC2 GPU instance lists below $100/h
SHOWN = ("p99 latency (s)", "p99 time to first token (s)", "error rate", "503 rate", "mean ready replicas")


def add_arguments(parser: Any) -> None:
    parser.add_argument("--stack", required=True, help="stack name (stacks/Pulumi.<stack>.yaml)")
    parser.add_argument("--service", required=True, help="the service whose settings are searched")
    parser.add_argument("--trials", type=int, default=30, help="optuna trials, today's settings first (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed (default 0)")
    parser.add_argument("--price", action="append", default=[], metavar="TYPE=ON_DEMAND[:SPOT]",
                        help="$/h of an instance type (repeatable); overrides catalog/prices.py")
    parser.add_argument("--knobs", metavar="A,B", help="search only these knobs (default: all): " + ", ".join(KNOBS))
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def _prices(specs: list[str], known: set[str]) -> dict[str, Price]:
    """Catalog prices with each `--price TYPE=ON_DEMAND[:SPOT]` over them: TYPE an instance type of the stack's
    catalog, given once, each price a finite number of $/h in (0, PRICE_MAX], SPOT at most ON_DEMAND (EC2's
    default maximum spot price is the on-demand price)."""
    prices = dict(PRICES)
    problems = []
    given: dict[str, str] = {}
    form = "expected TYPE=ON_DEMAND[:SPOT] in $/h, e.g. g6e.xlarge=1.861:0.74"
    for spec in specs:
        name, eq, value = spec.partition("=")
        name = name.strip()
        if not eq or not name:
            problems.append(Problem("--price", spec, form))
            continue
        if name not in known:
            problems.append(Problem("--price", spec, f"{name!r} is not an instance type of the stack's catalog; "
                                    "expected one of " + ", ".join(sorted(known))))
            continue
        od, _, spot = value.partition(":")
        try:
            figures = [float(od)] + ([float(spot)] if spot else [])
        except ValueError:
            problems.append(Problem("--price", spec, form))
            continue
        if not all(math.isfinite(f) and 0 < f <= PRICE_MAX for f in figures):
            problems.append(Problem("--price", spec, f"expected prices in $/h greater than 0 and at most "
                                    f"{PRICE_MAX:g}"))
            continue
        if figures[-1] > figures[0]:
            problems.append(Problem("--price", spec, f"expected a spot price at most the on-demand price "
                                    f"({figures[0]:g}): EC2's default maximum spot price is the on-demand price, "
                                    "so a spot node is interrupted before it costs more"))
            continue
        if name in given:
            problems.append(Problem("--price", spec, f"one --price per instance type; {name} is already "
                                    f"priced by {given[name]!r}"))
            continue
        given[name] = spec
        prices[name] = Price(figures[0], figures[-1], source="--price", date="given")
    if problems:
        raise InputError(problems)
    return prices


def _knobs(text: str | None) -> tuple[str, ...] | None:
    """`--knobs A,B` as names (None: all knobs); blank entries are dropped."""
    return None if text is None else tuple(k.strip() for k in text.split(",") if k.strip())


def _values(args: Any) -> tuple[str, dict]:
    """The stack's config values, after checking the arguments that name things in it (all before any
    simulation starts)."""
    if args.stack not in stack_names():
        raise InputError([Problem("--stack", args.stack, "expected one of " + ", ".join(stack_names()))])
    project, raw = stack_config_values(args.stack)
    values = project_values(raw, project)
    problems = []
    names = [s.get("name") for s in values.get("services") or [] if isinstance(s, dict)]
    if args.service not in names:
        problems.append(Problem("--service", args.service, "expected a service of the stack: " + ", ".join(names)))
    knobs = _knobs(args.knobs)
    unknown = [k for k in knobs or () if k not in KNOBS]
    if unknown:
        problems.append(Problem("--knobs", ",".join(unknown), "expected names from " + ", ".join(KNOBS)))
    elif knobs == ():
        problems.append(Problem("--knobs", args.knobs, "expected one or more names from " + ", ".join(KNOBS)
                                + " (leave --knobs out to search them all)"))
    if not 1 <= args.trials <= 10000:
        problems.append(Problem("--trials", args.trials, "expected an integer between 1 and 10000"))
    if not 0 <= args.seed <= SEED_MAX:
        problems.append(Problem("--seed", args.seed, f"expected an integer between 0 and {SEED_MAX} (2**32 - 1)"))
    if problems:
        raise InputError(problems)
    return project, values


def trials_problem(cfg: Any, trials: int) -> Problem | None:
    """A problem when the search would simulate more than the stack's gate.totalRequestBudget: each trial is a
    whole gate (every scenario up to gate.replications.max runs, its time-driven work included:
    stackconfig/gate_runs.py), and up to REJUDGE_MAX passing candidates are judged again on fresh seeds. The
    search is held to the budget one gate is held to (review rev13-bounds finding 2: --trials 10000 on prod,
    ≈ 20 s a trial, was accepted: ≈ 55 hours)."""
    from stackconfig.gate_runs import budget_text, gate_work, work_requests

    gate = cfg.gate
    _, requests, loops = gate_work(cfg.services, gate, str(ROOT), cfg.knative.autoscaler.enable_scale_to_zero)
    per_gate = gate.max_replications * work_requests(requests, loops)
    gates = trials + REJUDGE_MAX
    if per_gate <= 0 or gates * per_gate <= gate.total_request_budget:
        return None
    most = int(gate.total_request_budget // per_gate) - REJUDGE_MAX
    allowed = (f"expected at most {most} for stack {cfg.stack!r}" if most >= 1 else
               f"expected a stack whose gate the budget holds {REJUDGE_MAX + 1} times over (none does here)")
    return Problem("--trials", trials, f"{allowed}: each trial runs the whole gate, up to gate.replications.max "
                   f"({gate.max_replications}) runs of every scenario ≈ {per_gate:,.0f} requests (time-driven work "
                   f"included), and up to {REJUDGE_MAX} passing candidates are judged again on fresh seeds: "
                   f"({trials} + {REJUDGE_MAX}) × {per_gate:,.0f} ≈ {gates * per_gate:,.0f} requests, over "
                   f"{budget_text(gate)}; lower --trials, or gate.replications.max, gate.durationS or gate.warmupS "
                   "in the stack, or raise gate.totalRequestBudget there")


def run(args: Any, executor: Any = None, console: Any = None) -> int:
    """The tune command; 0 when a passing configuration was found, 1 when none passed."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from stackconfig.schema import parse_stack_config

    project, values = _values(args)
    cfg = parse_stack_config(values, project, args.stack)
    over = trials_problem(cfg, args.trials)
    if over:
        raise InputError([over])
    prices = _prices(args.price, set(cfg.catalog.instances))
    console = console or Console(stderr=args.json)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(f"tuning {args.stack}/{args.service}", total=args.trials)

        seen: list[Candidate] = []

        def on_trial(c: Candidate) -> None:
            seen.append(c)
            cheapest = best(seen)
            progress.update(task, advance=1, description=f"tuning {args.stack}/{args.service}: trial {c.number}"
                            + (f", best ${cheapest.cost_per_hour:.2f}/h" if cheapest else ""))

        candidates = tune(values, project, args.stack, args.service, trials=args.trials, seed=args.seed,
                          executor=executor, prices=prices, on_trial=on_trial,
                          knobs=_knobs(args.knobs))
        progress.update(task, description=f"tuning {args.stack}/{args.service}: re-judging the cheapest on fresh seeds")
        winner = confirm(values, project, args.stack, args.service, candidates, prices, executor)
    space = space_size(values, project, args.stack, args.service, prices, _knobs(args.knobs), limit=args.trials)
    result = summary(args, project, candidates, winner, space)
    if args.json:
        print(json.dumps(_finite(result), sort_keys=True, allow_nan=False))
    else:
        print_summary(console, result)
    return 0 if result["best"] is not None else 1


def _finite(value: Any) -> Any:
    """`value` with every non-finite float as None, so `--json` prints valid JSON (RFC 8259 has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _row(c: Candidate) -> dict:
    row = {"trial": c.number, "settings": c.settings, "passed": c.passed, "cost_per_hour": c.cost_per_hour,
           "failed": c.failed[:3], "metrics": {k: c.metrics[k] for k in SHOWN if k in c.metrics}}
    if c.fresh is not None:  # the re-judgement on fresh seeds (tuner/search.py confirm)
        row["fresh"] = {"gate_seed": c.fresh.gate_seed, **{k: v for k, v in _row(c.fresh).items()
                                                          if k not in ("trial", "settings")}}
    return row


def summary(args: Any, project: str, candidates: list[Candidate], winner: Candidate | None,
            space: int | None = None) -> dict:
    """`winner`: what `confirm` returned (the cheapest passing candidate that passed again on fresh seeds);
    `space`: how many distinct settings the search space holds (None: more than --trials)."""
    today = candidates[0] if candidates else None
    win = winner
    diff, notes = "", []
    if win is not None and today is not None and win.number != today.number:
        path = ROOT / "stacks" / f"Pulumi.{args.stack}.yaml"
        edit = changed(win.settings, today.settings)
        diff = stack_file_diff(path, project, args.service, edit)
        notes = deploy_notes(path, project, args.stack, edit)
    cheapest = best(candidates)
    return {"stack": args.stack, "service": args.service, "seed": args.seed, "trials": len(candidates),
            "requested_trials": getattr(args, "trials", len(candidates)), "space_size": space,
            "exhaustive": space is not None and len(candidates) >= space,
            "candidates": [_row(c) for c in candidates],
            "today": _row(today) if today else None, "best": _row(win) if win else None,
            "search_best": _row(cheapest) if cheapest else None,
            "rejudged": [_row(c) for c in candidates if c.fresh is not None],
            "today_is_cheapest": win is not None and today is not None and win.number == today.number,
            "passing": sum(c.passed for c in candidates), "diff": diff, "deploy_notes": notes,
            "tradeoffs": [_row(c) for c in pareto(candidates)]}


def _fmt(m: dict | None) -> str:
    if not m or m.get("value") is None:
        return "n/a"
    lo, hi = m.get("ci95") or (None, None)
    if lo is not None and lo == hi and m.get("replications", 0) > 1:
        return f"{m['value']:.4g} (identical runs)"
    return f"{m['value']:.4g}" + (f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else "")


def print_summary(console: Any, result: dict) -> None:
    from rich.table import Table

    from rich.markup import escape

    today, win = result["today"], result["best"]
    space = ("every setting of the search space" if result["exhaustive"] else
             f"of a search space of {result['space_size']}" if result["space_size"] is not None else
             f"sampled from a search space of more than --trials {result['requested_trials']}")
    console.print(f"[bold]{escape(result['stack'])}/{escape(result['service'])}[/]: {result['trials']} distinct "
                  f"settings tried ({space}; seed {result['seed']}), {result['passing']} passing every gate scenario")
    cost = lambda r: "n/a" if r["cost_per_hour"] is None else f"${r['cost_per_hour']:.2f}/h"  # noqa: E731
    print_trials(console, result, cost)
    for r in result["rejudged"]:
        fresh = r["fresh"]
        verdict = "passes again" if fresh["passed"] else "[bold red]fails[/]: " + escape("; ".join(fresh["failed"]))
        console.print(f"re-judged trial {r['trial']} ({cost(r)} on the gate's seeds) on fresh seeds (base "
                      f"{fresh['gate_seed']}): {verdict}")
    if win is None:
        if result["rejudged"]:
            console.print(f"[bold red]no configuration held up[/]: the {len(result['rejudged'])} cheapest passing "
                          f"(at most {REJUDGE_MAX}) failed on fresh seeds, so their passes were luck of the gate's "
                          "seeds; raise gate.replications or keep a margin from the SLO")
        else:
            console.print("[bold red]no configuration passed[/]; today's first miss: "
                          + (escape("; ".join(today["failed"])) if today else "n/a"))
        return
    fresh = win["fresh"]
    table = Table(title="predicted (steady scenario, 95% CI over replications)")
    table.add_column("")
    table.add_column("today" + ("" if today["passed"] else " (misses its SLO)"), justify="right")
    table.add_column("winner (gate's seeds)", justify="right")
    table.add_column("winner (fresh seeds)", justify="right")
    table.add_row("node group cost", cost(today), cost(win), cost(fresh))
    for name in SHOWN:
        table.add_row(name, _fmt(today["metrics"].get(name)), _fmt(win["metrics"].get(name)),
                      _fmt(fresh["metrics"].get(name)))
    console.print(table)
    if result["today_is_cheapest"]:
        console.print("Today's settings are the cheapest passing configuration the search found.")
    else:
        console.print("The edit to the stack file:")
        console.print(result["diff"], markup=False, highlight=False)
        for note in result["deploy_notes"]:
            console.print("[bold yellow]before pulumi up:[/] ", end="")
            console.print(note, markup=False, highlight=False)
    trade = Table(title="trade-offs: passing configurations no other beats on both cost and p99 latency")
    for col in ("trial", "cost", "p99 latency (s)", "settings"):
        trade.add_column(col)
    for r in result["tradeoffs"]:
        trade.add_row(str(r["trial"]), cost(r), _fmt(r["metrics"].get("p99 latency (s)")),
                      ", ".join(f"{k}={v}" for k, v in sorted(r["settings"].items())))
    console.print(trade)


def print_trials(console: Any, result: dict, cost: Any) -> None:
    """Every distinct setting tried: what it changed from today's, and its verdict (cost, or its first miss)."""
    from rich.markup import escape
    from rich.table import Table

    today = (result["today"] or {}).get("settings") or {}
    table = Table(title="trials (each distinct setting once; trial 0 is today's)")
    for col in ("trial", "changed from today", "verdict"):
        table.add_column(col)
    for r in result["candidates"]:
        edit = ", ".join(f"{k}={v}" for k, v in sorted(r["settings"].items()) if v != today.get(k)) or "(today's)"
        verdict = f"passes, {cost(r)}" if r["passed"] else "misses: " + "; ".join(r["failed"][:1])
        table.add_row(str(r["trial"]), escape(edit), escape(verdict))
    console.print(table)

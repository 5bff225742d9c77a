"""`whatif`'s output: per gate scenario a rich table of both sides' estimates, the difference after − before and
the SLO terms matched by name, the lines naming each side's missed or warned terms, and the before/after plots."""

from __future__ import annotations

from pathlib import Path

from gate.verdict import STATUS_MARKUP, UNDECIDED, Check, Verdict, format_estimate
from preflight.whatif import Comparison, WhatIf
from simulation.estimates import Estimate
from simulation.report_terms import METRICS

SHOWN = ("error rate", "503 rate", "429 rate", "504 rate", "502 rate", "400 rate (input caps, excluded)",
         "p50 latency (s)", "p99 latency (s)", "p99 latency, all requests (s)", "p99 time to first token (s)",
         "throughput (req/s)", "mean ready replicas", "pod GPU-hours", "cold starts", "longest cold start (s)",
         "time at maxReplicas (fraction)", "peak Pending pods")


def plot(result: WhatIf, out: Path) -> list[Path]:
    from gate.plots import plot_runs

    paths = []
    for c in (c for c in result.comparisons if not c.unchanged):
        name = c.after.service if c.after.scenario == "steady" else f"{c.after.service}-{c.after.scenario}"
        title = (f"what-if {result.stack}/{c.after.label}: before"
                 + (f" ({result.against})" if result.against else "") + " vs after; replication 0")
        paths.append(plot_runs(title, [("before", c.reports[0][0]), ("after", c.reports[1][0])],
                               out / f"whatif-{result.stack}-{name}.png"))
    return paths


def _change(e: Estimate) -> str:
    if e.value is None or e.lo is None:
        return ""
    if e.lo > 0 or e.hi < 0:
        return "[bold]changed[/]"
    return "[dim]no detectable change[/]"


def tables(result: WhatIf) -> list:
    from rich.markup import escape
    from rich.table import Table

    out = []
    for c in result.comparisons:
        if c.unchanged:
            out.append(f"{escape(result.stack)}/{escape(c.after.label)}: unchanged by these edits (the same scenario "
                       "on both sides; "
                       f"{'meets' if c.after.passed else 'misses'} its SLO)")
            out.extend(verdict_lines(c))
            continue
        before = "before" + (f" ({escape(result.against)})" if result.against else "")
        runs = ("on common random numbers" if c.common_random_numbers else
                f"on independent runs (gate.seed {result.gate_seeds[0]} before, {result.gate_seeds[1]} after: "
                "no common random numbers)")
        t = Table(title=f"what-if {escape(result.stack)}/{escape(c.after.label)}: {c.replications} replications per "
                        f"side {runs} (95% intervals); verdicts by the gate's rule on "
                        f"{c.before.replications} (before) and {c.after.replications} (after) replications")
        for col in ("metric", before, "after", "after − before (paired)" if c.common_random_numbers else
                    "after − before (independent)", ""):
            t.add_column(col)
        for name in SHOWN:
            pct = METRICS[name][0] == "rate"
            t.add_row(name, format_estimate(c.metrics[0][name], pct), format_estimate(c.metrics[1][name], pct),
                      format_estimate(c.difference[name], pct), _change(c.difference[name]))
        t.add_section()
        for name, cb, ca in slo_rows(c.before, c.after):
            limits = {x.limit for x in (cb, ca) if x is not None}
            limit = " / ".join(f"{x:g}" for x in ((cb.limit, ca.limit) if len(limits) > 1 else limits))
            t.add_row(escape(f"SLO {name} ≤ {limit}"), _status(cb, c.before.undecided_policy),
                      _status(ca, c.after.undecided_policy), "", "")
        t.add_row("verdict", "[green]pass[/]" if c.before.passed else "[red]FAIL[/]",
                  "[green]pass[/]" if c.after.passed else "[red]FAIL[/]", "", "")
        out.append(t)
        out.extend(verdict_lines(c))
    return out


def verdict_lines(c: Comparison) -> list[str]:
    """Under a comparison's table, each side's terms that fail the gate and those `gate.undecided` lets pass
    with a warning, in the gate's own words (`Verdict.misses`, `Verdict.warnings`: the estimate, its interval and
    how an undecided term was settled), so a FAIL verdict always has a line saying which term and why. Rich markup,
    the gate's text escaped."""
    from rich.markup import escape

    sides = (("both sides", c.after),) if c.unchanged else (("before", c.before), ("after", c.after))
    return [f"  {side} {kind}: {escape(line)}" for side, v in sides
            for kind, lines in (("[bold red]misses[/]", v.misses()), ("[yellow]warning[/]", v.warnings()))
            for line in lines]


NOT_A_TERM = "[dim]— not a term here[/]"


def slo_rows(before: Verdict, after: Verdict) -> list[tuple[str, Check | None, Check | None]]:
    """The two sides' SLO checks matched by name (before's order, then the terms only the after side has); None
    on the side without that term (an edit added or removed it)."""
    b, a = {c.name: c for c in before.checks}, {c.name: c for c in after.checks}
    return [(name, b.get(name), a.get(name)) for name in dict.fromkeys([*b, *a])]


def _status(check: Check | None, policy: str) -> str:
    """A term's status as the gate settles it: an undecided term shows what `gate.undecided` (`policy`) made of
    it, FAIL or a pass with a warning, as `Verdict.passed` counts it (the line under the table says why)."""
    if check is None:
        return NOT_A_TERM
    if check.status != UNDECIDED:
        return STATUS_MARKUP[check.status]
    settled = "[bold red]FAIL[/]" if check.fails(policy) else "[bold yellow]pass, warning[/]"
    return f"{settled} (undecided; gate.undecided: {policy})"

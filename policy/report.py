"""Readable policy report for people without the Pulumi CLI.

    python -m policy.report --stack prod          # one stack
    python -m policy.report                       # every stack in stacks/
    python -m policy.report --stack-dir ci/stacks # every Pulumi.<name>.yaml in a folder of your own
    python -m policy.report --stack prod --mandatory-only
    python -m policy.report --rules               # the rule table
    python -m policy.report --json                # one JSON object: every finding with its stack key

Runs the real program under mocks (the stack tests' harness), evaluates every rule in `policy.rules` and prints a
`rich` table per stack. Exit status: 0 when no mandatory rule fails (advisory findings are shown but do not fail),
1 when a mandatory rule fails, 2 for a bad `--stack` or a stack config the program rejects (every other stack is
still checked; the worst status wins).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

from validation.errors import InputError, Problem, exit_with  # noqa: E402
from validation.errors import shown as shown_value  # noqa: E402
from validation.cli import guarded  # noqa: E402
from policy.rules import MANDATORY, RULES, Violation, evaluate  # noqa: E402


def rules_table() -> Table:
    table = Table(title="kserve-preflight policy rules", show_lines=False)
    for col in ("id", "severity", "scope", "checks", "guides"):
        table.add_column(col, overflow="fold")
    for r in RULES:
        table.add_row(r.id, _sev(r.severity), "stack" if r.stack else "resource", escape(r.title), escape(r.source))
    return table


def _sev(severity: str, waived: str = "") -> str:
    if waived:
        return f"[cyan]waived[/] ({severity})"
    return "[bold red]mandatory[/]" if severity == MANDATORY else "[yellow]advisory[/]"


def violations_table(stack: str, violations: list[Violation]) -> Table:
    files = sorted({v.stack_file for v in violations if v.stack_file})
    where = f" ({', '.join(files)})" if files else ""
    table = Table(title=escape(f"stack {stack}{where}: policy findings"), show_lines=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("rule", no_wrap=True)
    table.add_column("stack key (service) / resource", overflow="fold")
    table.add_column("what to change", overflow="fold")
    order = sorted(violations, key=lambda v: (bool(v.waived), v.severity != MANDATORY, v.rule, v.resource_name))
    for v in order:
        resource = f"{v.resource_type.rsplit(':', 1)[-1]} {v.resource_name}"
        edit = (v.key + (f" ({v.service})" if v.service else "")) if v.key else "(no stack key: generated)"
        message = f"waived because: {v.waived}\n{v.message}" if v.waived else v.message
        table.add_row(_sev(v.severity, v.waived), v.rule, escape(f"{edit}\n{resource}"),
                      escape(message))  # messages quote keys and values, e.g. "[spike]": not markup
    return table


def check_stack(stack: str, stack_dir: Optional[Path] = None) -> list[Violation]:
    """Every rule over `stack` (read from `stack_dir` when given); raises InputError for an unknown stack or a
    config the program rejects."""
    import pulumi

    from policy import stack as policy_stack

    from policy.keys import stack_keys
    from stackconfig.load import program_refusal

    try:  # the gate off: the rules judge resources; the SLO gate is `preflight check`'s stage
        resources = policy_stack.stack_resources(stack, stack_dir=stack_dir)
    except pulumi.RunError as err:
        raise program_refusal(stack, err, stack_dir=stack_dir) from None
    # where the user fixes each one (stack file and key); a waiver of an unknown rule is refused here
    return stack_keys(evaluate(resources), stack, stack_dir, resources)


def _close_event_loop() -> None:
    """Close the event loops the mocks ran on now, not at interpreter shutdown (where `BaseEventLoop.__del__`
    can hit an already-closed self-pipe and print a spurious traceback)."""
    import asyncio
    import gc

    for obj in gc.get_objects():
        if isinstance(obj, asyncio.AbstractEventLoop) and not obj.is_closed() and not obj.is_running():
            obj.close()


@guarded
def main(argv: Optional[Sequence[str]] = None, console: Optional[Console] = None) -> int:
    from stackconfig.load import stack_names

    parser = argparse.ArgumentParser(prog="python -m policy.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", action="append", metavar="NAME",
                        help="check stacks/Pulumi.NAME.yaml (repeatable; default: every stack in the folder)")
    parser.add_argument("--stack-dir", type=Path, metavar="DIR",
                        help="read the Pulumi.<stack>.yaml files from DIR instead of this project's stacks/")
    parser.add_argument("--mandatory-only", action="store_true", help="hide advisory findings")
    parser.add_argument("--rules", action="store_true", help="print the rule table and exit")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (every stack's findings: stack, rule, severity, resource, key, "
                             "message) instead of tables; the same exit status")
    args = parser.parse_args(argv)
    console = console or Console(width=None if sys.stdout.isatty() else 140)
    if args.rules:
        console.print(rules_table())
        return 0
    try:
        known = stack_names(stack_dir=args.stack_dir)
    except InputError as err:
        exit_with(err)
    if not known and args.stack_dir is not None:
        exit_with(InputError([Problem("--stack-dir", str(args.stack_dir), "expected at least one "
                                      "Pulumi.<stack>.yaml file in it")]))
    stacks = args.stack or known
    unknown = [s for s in stacks if s not in known]
    if unknown:
        exit_with(InputError([Problem("--stack", s, "expected one of " + ", ".join(known)) for s in unknown]))
    failed = refused = False
    results = []
    for stack in stacks:   # every stack, even after one is refused: CI sees all of them in one run
        try:
            found = check_stack(stack, args.stack_dir)
        except InputError as err:
            print(f"error: {err}", file=sys.stderr)
            results.append(stack_json(stack, None, err))
            if not args.json:
                console.print(f"[bold red]ERROR[/] stack {escape(stack)}: refused before the rules ran "
                              "(the error above)")
            refused = True
            continue
        shown = [v for v in found if v.severity == MANDATORY] if args.mandatory_only else found
        n_mandatory = sum(v.mandatory for v in found)
        n_waived = sum(bool(v.waived) for v in found)
        failed = failed or bool(n_mandatory)
        results.append(stack_json(stack, shown, mandatory=n_mandatory, advisory=len(found) - n_mandatory - n_waived,
                                  waived=n_waived))
        if args.json:
            continue
        if shown:
            console.print(violations_table(stack, shown))
        status = "[bold red]FAIL[/]" if n_mandatory else "[bold green]PASS[/]"
        waived = f", {n_waived} waived" if n_waived else ""
        console.print(f"{status} stack {stack}: {n_mandatory} mandatory, {len(found) - n_mandatory - n_waived} "
                      f"advisory{waived} finding(s) over {len(RULES)} rules")
    code = 2 if refused else 1 if failed else 0
    if args.json:
        console.file.write(json.dumps({"exit": code, "passed": code == 0, "rules": len(RULES), "stacks": results},
                                      indent=2) + "\n")
    return code


def violation_json(stack: str, v: Violation) -> dict:
    """One finding for machines: where it is (stack, stack file, service, key) and what it is."""
    return {"stack": stack, "rule": v.rule, "severity": v.severity, "resource_type": v.resource_type,
            "resource": v.resource_name, "urn": v.urn, "stack_file": v.stack_file, "service": v.service,
            "key": v.key, "waived": v.waived, "message": v.message}


def stack_json(stack: str, shown: Optional[list[Violation]], error: Optional[InputError] = None,
               mandatory: int = 0, advisory: int = 0, waived: int = 0) -> dict:
    """A stack's entry in `--json`: status pass | fail | error, its counts and findings, or the refusal's
    problems (path, value, what is allowed) when the program refused it."""
    if error is not None:
        return {"stack": stack, "status": "error", "source": error.source,
                "errors": [{"path": p.path, "value": shown_value(p.value), "allowed": p.allowed}
                           for p in error.problems], "violations": []}
    return {"stack": stack, "status": "fail" if mandatory else "pass", "mandatory": mandatory, "advisory": advisory,
            "waived": waived, "violations": [violation_json(stack, v) for v in shown or []]}


def cli() -> None:
    """The `kserve-preflight-policy` console command (and `python -m policy.report`)."""
    try:
        status = main()
    finally:
        _close_event_loop()
    sys.exit(status)


if __name__ == "__main__":
    cli()

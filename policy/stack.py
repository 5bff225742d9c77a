"""The resources of a shipped stack as the policies see them, from the real program run under mocks.

Uses the same offline harness as the stack tests (offline/__init__.py: `run_program`), so pytest and the report
check exactly what `pulumi preview` would register: the wire-format inputs plus the options captured by the
harness's stack transformation (`protect`, `ignore_changes`). URNs are built the way the engine spells them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from policy.rules import Resource

PROJECT = "kserve-preflight"


def urn(stack: str, typ: str, name: str, project: str = PROJECT) -> str:
    return f"urn:pulumi:{stack}::{project}::{typ}::{name}"


def resources_from_run(run: Any, stack: str) -> list[Resource]:
    """Custom resources (components and providers are not policy subjects) recorded by a `offline.Run`."""
    out = []
    for rec in run.resources:
        if not rec.custom or rec.typ.startswith("pulumi:providers:"):
            continue
        opts = run.options.get(rec.name)
        out.append(Resource(rec.typ, rec.name, rec.inputs, urn(stack, rec.typ, rec.name),
                            bool(getattr(opts, "protect", None)),
                            tuple(getattr(opts, "ignore_changes", None) or ())))
    return out


def gate_off(config: dict) -> None:
    """Disable the SLO gate in a stack's config (the pulumi config mapping, `<project>:<key>` keys). The rules judge
    the manifests: with the gate on, a stack that misses its SLO stops the program (`pulumi.RunError`) before any
    resource is registered, hiding every policy finding. The gate has its own stage (`preflight check`, `pulumi up`)."""
    project = next((k.split(":", 1)[0] for k in config if k.endswith(":services")), None)
    if project:
        config[f"{project}:gate"] = {"enabled": False}


def stack_resources(stack: str, edit: Optional[Callable[[dict], None]] = None,
                    stack_dir: Optional[str | Path] = None) -> list[Resource]:
    """Run program.main() for `stack` under mocks, the SLO gate off (`gate_off`), and return its resources.
    `stack_dir`: read `Pulumi.<stack>.yaml` from that folder (`--stack-dir`) instead of the project's `stacks/`.

    Raises `validation.errors.InputError` for an unknown stack and `pulumi.RunError` for an invalid stack config.
    """
    from offline import run_program

    def edit_gate_off(config: dict) -> None:
        gate_off(config)
        if edit is not None:
            edit(config)

    return resources_from_run(run_program(stack, edit=edit_gate_off, stack_dir=stack_dir), stack)

"""Run the real Pulumi program offline under `pulumi.runtime` mocks, with a stack's config loaded as the CLI would.

Used by the tests, the policy report and `python -m preflight check`; nothing in `program.py` depends on it.

Follows ../shared/reference/pulumi-offline-testing.md §1: reset the root stack, install config, keep the
MockMonitor to list registered URNs, answer only the invokes the program uses and fail loudly on any other.
"""

from __future__ import annotations

import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pulumi
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

from stackconfig.load import ROOT, stack_config_values

FAKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="


@dataclass
class Recorded:
    typ: str
    name: str
    inputs: dict
    custom: bool


class Mocks(pulumi.runtime.Mocks):
    """Echo inputs as outputs (camelCase), plus the few outputs the program reads."""

    def __init__(self) -> None:
        self.resources: list[Recorded] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(Recorded(args.typ, args.name, args.inputs, args.custom))
        state = dict(args.inputs)
        if args.typ == "aws:iam/role:Role":
            state["arn"] = f"arn:aws:iam::123456789012:role/{args.name}"
            state["name"] = args.name
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            state.setdefault("nodeGroupName", args.name)
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:eks/getCluster:getCluster":
            name = args.args["name"]
            return {"name": name, "endpoint": f"https://{name}.eks.example.test",
                    "certificateAuthorities": [{"data": FAKE_CA}], "version": "1.36"}
        raise NotImplementedError(f"the mocks do not answer invoke {args.token!r}; add it to offline/__init__.py")


@dataclass
class Run:
    """What one program run registered."""

    mocks: Mocks
    monitor: MockMonitor
    options: dict[str, pulumi.ResourceOptions] = field(default_factory=dict)  # resource name → options

    @property
    def resources(self) -> list[Recorded]:
        return self.mocks.resources

    def of_type(self, typ: str) -> list[Recorded]:
        return [r for r in self.resources if r.typ == typ]

    def kubernetes_manifests(self) -> list[dict]:
        """Wire-format inputs of every Kubernetes object: exactly the manifests Pulumi would apply."""
        return [r.inputs for r in self.resources if r.typ.startswith("kubernetes:") and r.custom
                and not r.typ.startswith("pulumi:providers")]

    def outputs(self) -> dict[str, Any]:
        return dict(settings.get_root_resource().outputs)


def config_strings(values: dict[str, Any]) -> dict[str, str]:
    """CLI wire format: every value a string, objects and lists as JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


def run_program(stack: str, *, values: dict[str, Any] | None = None,
                edit: Callable[[dict[str, Any]], None] | None = None, preview: bool = False,
                as_cli: bool = False, stack_dir: Path | str | None = None) -> Run:
    """Run program.main() for `stack`; `values` replaces the stack's config, `edit` mutates a copy of it.

    `as_cli` runs `__main__.py` the way Pulumi's Python language host does (`runpy.run_path(..., "__main__")`).
    `stack_dir` reads `Pulumi.<stack>.yaml` from that folder instead of the project's `stackConfigDir`.
    """
    project, loaded = stack_config_values(stack, stack_dir=stack_dir)
    config = json.loads(json.dumps(loaded if values is None else values))
    if edit:
        edit(config)
    settings.ROOT.set(None)  # gotcha 7: the root stack persists across set_mocks
    pulumi.runtime.set_all_config(config_strings(config), [])
    mocks = Mocks()
    monitor = MockMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    run = Run(mocks, monitor)

    def record_options(args: pulumi.ResourceTransformationArgs):
        run.options[args.name] = args.opts
        return None

    @pulumi.runtime.test
    def body():
        from program import main

        pulumi.runtime.register_stack_transformation(record_options)
        if as_cli:
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
        else:
            main()

    body()
    return run

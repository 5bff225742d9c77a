"""`python -m manifests render --stack dev --out DIR`: write a stack's manifests as YAML files, offline.

For review and GitOps: one file per Kubernetes object in apply order, plus the EKS node group's arguments.
Every manifest is validated first (kubernetes-validate strict, the InferenceService JSON schema); a config
mistake or an invalid manifest exits with status 2 and a message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from manifests import render_stack
from manifests.node_group import node_group_spec
from validation.kubernetes import validation_errors
from validation.errors import InputError, Problem, exit_with
from validation.cli import guarded
from validation.paths import check_output_dir
from stackconfig.load import load_stack, stack_names


def render(stack: str, out: Path) -> list[Path]:
    cfg = load_stack(stack)
    manifests = render_stack(cfg)
    errors = [e for m in manifests for e in validation_errors(m, cfg.cluster.kubernetes_version)]
    if errors:
        raise InputError([Problem("manifest", e, "expected a valid manifest") for e in errors], f"stack {stack}")
    files = {out / f"{i:02d}-{m['kind'].lower()}-{m['metadata']['name']}.yaml": yaml.safe_dump(m, sort_keys=False)
             for i, m in enumerate(manifests)}
    files[out / "eks-nodegroup.yaml"] = ("# aws.eks.NodeGroup arguments (nodeRoleArn is wired by the GpuNodeGroup "
                                         "component)\n" + yaml.safe_dump(node_group_spec(cfg), sort_keys=False))
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text)
    except OSError as err:
        raise InputError([Problem("--out", str(out.parent), f"expected a folder to write into ({err})")]) from None
    return list(files)


@guarded
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m manifests", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("render", help="write a stack's manifests to a folder of YAML files")
    cmd.add_argument("--stack", default="dev", help="stack name: " + ", ".join(stack_names()) + " (default dev)")
    cmd.add_argument("--out", type=Path, default=Path("rendered"), help="output folder (default ./rendered)")
    args = parser.parse_args(argv)
    try:
        check_output_dir("--out", args.out)
        written = render(args.stack, args.out / args.stack)
    except InputError as err:
        exit_with(err)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

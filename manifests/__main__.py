"""`python -m manifests render --stack dev --out DIR`: write a stack's manifests as YAML files, offline.

For review and GitOps: one file per Kubernetes object in apply order, plus the EKS node group's arguments.
Every manifest is validated first (kubernetes-validate strict, the InferenceService JSON schema); a config
mistake or an invalid manifest exits with status 2 and a message, never a traceback.

The files go to OUT/STACK, which then holds exactly this render: a re-render removes the files an earlier one
wrote that this one does not (a file's index shifts when an object comes or goes, so an InferenceService from the
old render would sort after the new one and `kubectl apply -f` would apply it last; Argo CD or Flux would keep the
removed objects). What it wrote is listed in OUT/STACK/.kserve-preflight-render (no .yaml ending: kubectl and
GitOps tools skip it); a folder without that list (an earlier version's render) has the files of this tool's
names removed: `NN-<kind>-<name>.yaml` and `eks-nodegroup.yaml`. Any other file is left in place and named.
"""

from __future__ import annotations

import argparse
import re
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


RECORD = ".kserve-preflight-render"   # the files the last render wrote into OUT/STACK, one a line
OWN_NAME = re.compile(r"\d{2,}-[a-z0-9]+-[a-z0-9][a-z0-9.-]*\.yaml|eks-nodegroup\.yaml")  # what render() names
MANIFEST_ENDINGS = (".yaml", ".yml", ".json")  # what `kubectl apply -f DIR` reads from a folder


def _written_before(out: Path) -> set[str]:
    """The files an earlier render wrote into `out`: its record's names, or, without a record (a render by an
    earlier version), the files that carry this tool's names. Only plain names of this tool's form count."""
    try:
        listed = (out / RECORD).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        listed = [p.name for p in out.iterdir()]
    except (OSError, UnicodeDecodeError):
        listed = []
    return {name for name in listed if OWN_NAME.fullmatch(name) and (out / name).is_file()}


def render(stack: str, out: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(written, removed: an earlier render's files not in this one, other manifest files found in `out`)."""
    cfg = load_stack(stack)
    manifests = render_stack(cfg)
    errors = [e for m in manifests for e in validation_errors(m, cfg.cluster.kubernetes_version)]
    if errors:
        raise InputError([Problem("manifest", e, "expected a valid manifest") for e in errors], f"stack {stack}")
    files = {out / f"{i:02d}-{m['kind'].lower()}-{m['metadata']['name']}.yaml": yaml.safe_dump(m, sort_keys=False)
             for i, m in enumerate(manifests)}
    files[out / "eks-nodegroup.yaml"] = ("# aws.eks.NodeGroup arguments (nodeRoleArn is wired by the GpuNodeGroup "
                                         "component)\n" + yaml.safe_dump(node_group_spec(cfg), sort_keys=False))
    names = {path.name for path in files}
    try:
        out.mkdir(parents=True, exist_ok=True)
        stale = sorted(_written_before(out) - names)
        for path, text in files.items():
            path.write_text(text)
        for name in stale:
            (out / name).unlink()
        (out / RECORD).write_text("# written by `python -m manifests render`; a re-render removes these files\n"
                                  + "".join(f"{name}\n" for name in sorted(names)))
        others = sorted(p for p in out.iterdir() if p.name not in names and p.name.endswith(MANIFEST_ENDINGS))
    except OSError as err:
        raise InputError([Problem("--out", str(out.parent), f"expected a folder to write into ({err})")]) from None
    return list(files), [out / name for name in stale], others


@guarded
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m manifests", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("render", help="write a stack's manifests to a folder of YAML files")
    cmd.add_argument("--stack", default="dev", help="stack name: " + ", ".join(stack_names()) + " (default dev)")
    cmd.add_argument("--out", default="rendered", help="output folder (default ./rendered); the files go to "
                     "OUT/STACK, and a re-render there removes the files an earlier render wrote that this one does "
                     f"not (listed in OUT/STACK/{RECORD}), leaving any other file in place")
    args = parser.parse_args(argv)
    try:
        if not args.out:
            raise InputError([Problem("--out", args.out, "expected a folder path (an empty one would write into "
                                      "the current folder; give . for that)")])
        out = check_output_dir("--out", Path(args.out))
        written, removed, others = render(args.stack, out / args.stack)
    except InputError as err:
        exit_with(err)
    for path in written:
        print(path)
    for path in removed:
        print(f"removed {path}: an earlier render wrote it, this one does not", file=sys.stderr)
    if others:
        print(f"note: {out / args.stack} also holds {', '.join(p.name for p in others)}, which this tool did not "
              f"write; `kubectl apply -f {out / args.stack}` applies every .yaml, .yml and .json file in it",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

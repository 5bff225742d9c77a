"""What-if inputs: a stack's config values from the working tree or a git revision, `--set` edits, workloads.

`--set PATH=VALUE` edits the stack's project keys (`kserve-preflight:` dropped, or kept as the stack file writes
it). PATH is dot-separated; a list of services is indexed by service name (or position); a key with dots in it
(an annotation) is written in brackets or matched whole when it exists:
`services.chat.annotations["autoscaling.knative.dev/window"]=120s`. Inside one of the stack's string maps
(`STRING_MAPS`: annotations, labels, nodeSelector, runtime.env, knative features and autoscaler) the rest of the
path is one key, so `services.chat.annotations.autoscaling.knative.dev/window=120s` works too; everywhere else a
dot always goes one level down (`gate.replications.max` is `gate: {replications: {max: …}}`). VALUE is read as
YAML (`8` is a number, `"8"` a string, `{min: 2}` a mapping). The edited values are then parsed by the stack config's
own schema, so a misspelt key or a bad value gets the same key-path error as in the stack file.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from stackconfig.load import ROOT, project_values, read_project, stack_config_values
from simulation.workload import parse_workload
from validation.errors import InputError, Problem
from validation.fields import Section
from validation.yaml_input import MAX_DEPTH, parse_yaml, plain, read_yaml

# The stack schema's mappings of strings to strings (`Section.str_map` and knative.autoscaler's ConfigMap keys), by
# their path with "*" for a list item: only there is the rest of a --set path one key that may hold dots.
STRING_MAPS = frozenset({
    ("services", "*", "annotations"), ("services", "*", "nodeSelector"), ("services", "*", "runtime", "env"),
    ("gpuNodeGroup", "labels"), ("knative", "features"), ("knative", "autoscaler"),
})

_TOKEN = re.compile(r'\[\s*"([^"]*)"\s*\]|\[\s*\'([^\']*)\'\s*\]|([^.\[\]]+)')


def stack_values(stack: str, rev: str | None = None) -> tuple[str, dict]:
    """(project, project-key values) of a stack: the working tree's file, or the file at git revision `rev`
    (resolved first by `git rev-parse --verify --end-of-options REV^{commit}`, then read from that commit)."""
    if rev is None:
        project, values = stack_config_values(stack)
        return project, project_values(values, project)
    folder = read_project().get("stackConfigDir", ".")
    rel = f"{folder}/Pulumi.{stack}.yaml"
    commit = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], rev,
                  "a git revision (a commit, branch or tag) of this repository").decode("ascii").strip()
    data = _git(["show", f"{commit}:{rel}"], rev, f"a git revision that has {rel}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError([Problem("--against", rev, f"expected {rel} at that revision to be UTF-8 text "
                                  f"(byte {err.start}: {err.reason})")]) from None
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        project, values = stack_config_values(stack, root)
    return project, project_values(values, project)


def _git(argv: list[str], rev: str, allowed: str) -> bytes:
    """`git <argv>`'s output in the project's folder; an InputError naming `--against` when it fails. A revision
    starting with '-' is refused first: git would read it as an option (`--output=FILE` writes a file)."""
    if not rev or rev.startswith("-") or "\0" in rev:
        raise InputError([Problem("--against", rev, f"expected {allowed}, not starting with '-'")])
    try:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as err:
        detail = ((getattr(err, "stderr", b"") or b"").decode("utf-8", "replace").strip()
                  or ("" if isinstance(err, subprocess.CalledProcessError) else str(err)))
        raise InputError([Problem("--against", rev, f"expected {allowed}"
                                  + (f" ({detail[:300]})" if detail else ""))]) from None


def _tokens(path: str) -> list[str]:
    """`a.b["c.d"].e` → ["a", "b", "c.d", "e"]; [] when the path cannot be read."""
    out, i = [], 0
    while i < len(path):
        m = _TOKEN.match(path, i)
        if m is None:
            return []
        out.append(next(g for g in m.groups() if g is not None))
        i = m.end()
        if i < len(path) and path[i] == ".":
            i += 1
            if i == len(path):
                return []
    return out


def _own_key(path: str, assignment: str) -> str:
    """PATH without the project's namespace (`kserve-preflight:services.chat…`, the key as the stack file writes
    it, is `services.chat…`); another namespace's key (`aws:region`) is not the project's to edit."""
    head = re.split(r"[.\[]", path, maxsplit=1)[0]
    namespace, colon, _ = head.partition(":")
    if not colon:
        return path
    project = read_project().get("name")
    if namespace == project:
        return path[len(namespace) + 1:]
    raise InputError([Problem("--set", assignment, f"expected a key of this project, written without its namespace "
                              f"(or with '{project}:'); '{namespace}:' keys are another package's config, which the "
                              "stack's simulation does not read")])


def apply_set(values: dict, assignment: str) -> None:
    """Apply one `PATH=VALUE` to `values` in place; raises InputError naming `--set` for a bad path."""
    path, sep, text = assignment.partition("=")
    path = _own_key(path.strip(), assignment)
    tokens = _tokens(path)
    if not sep or not tokens:
        raise InputError([Problem("--set", assignment, 'expected PATH=VALUE, e.g. services.chat.containerConcurrency=8 '
                                  'or services.chat.annotations["autoscaling.knative.dev/window"]=120s')])
    if len(tokens) > MAX_DEPTH:
        raise InputError([Problem("--set", f"{path[:60]}… ({len(tokens)} levels)", f"expected a PATH at most "
                                  f"{MAX_DEPTH} levels deep, as a stack file may nest")])
    problems: list[Problem] = []
    value = plain(parse_yaml(text, assignment, "--set", problems), "--set", problems) if text.strip() else ""
    if problems:
        raise InputError([Problem("--set", assignment, f"a YAML value after '=' ({p.allowed})") for p in problems])
    node: Any = values
    done: list[str] = []
    shape: list[str] = []   # `done` with "*" for a list item: the schema path STRING_MAPS names
    i = 0
    while i < len(tokens) - 1:
        tok = tokens[i]
        if isinstance(node, list):
            node = _item(node, tok, ".".join(done) or "(top)", assignment)
            done.append(tok)
            shape.append("*")
            i += 1
            continue
        if not isinstance(node, dict):
            raise InputError([Problem("--set", assignment, f"{'.'.join(done)} is a {type(node).__name__}, "
                                      "not a mapping or list")])
        whole = ".".join(tokens[i:])
        if whole in node or tuple(shape) in STRING_MAPS:
            tokens[i:] = [whole]  # a key with dots in it (annotations), or any key of a string map
            break
        if tok not in node:
            node[tok] = {}
        node = node[tok]
        done.append(tok)
        shape.append(tok)
        i += 1
    last = tokens[-1]
    if isinstance(node, list):
        idx = _index(node, last, ".".join(done), assignment)
        node[idx] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise InputError([Problem("--set", assignment, f"{'.'.join(done)} is a {type(node).__name__}, "
                                  "not a mapping or list")])


def _index(items: list, tok: str, where: str, assignment: str) -> int:
    names = [it.get("name") for it in items if isinstance(it, dict)]
    if tok in names:
        return names.index(tok)
    if tok.isdigit() and int(tok) < len(items):
        return int(tok)
    allowed = ", ".join(str(n) for n in names if n) or f"0–{len(items) - 1}"
    raise InputError([Problem("--set", assignment, f"{where}: no item {tok!r}; expected one of {allowed}")])


def _item(items: list, tok: str, where: str, assignment: str) -> Any:
    return items[_index(items, tok, where, assignment)]


def apply_sets(values: dict, assignments: list[str]) -> dict:
    out = copy.deepcopy(values)
    for a in assignments:
        apply_set(out, a)
    return out


def read_workload(path: str) -> dict:
    """A `--workload FILE`: the simulation's workload mapping, checked by the stack's workload schema here so that a
    mistake names the file (not the stack the workload replaces). A trace's relative `path` is relative to FILE's
    folder, as in a scenario file, and is handed on made absolute."""
    problems: list[Problem] = []
    data = read_yaml(Path(path), "--workload", problems)
    if problems:
        raise InputError(problems, path)
    prefix = ""
    if isinstance(data, dict) and isinstance(data.get("workload"), dict):
        data, prefix = data["workload"], "workload"  # a scenario file: take its workload
    if not isinstance(data, dict):
        raise InputError([Problem("--workload", path, "a YAML mapping in the simulation's workload format "
                                  "(kind, rate, … — docs/simulation.md)")])
    folder = str(Path(path).resolve().parent)   # a trace's relative `path` is the file's, as in a scenario
    parse_workload(Section(data, prefix, problems), base_dir=folder)
    if problems:
        raise InputError(problems, path)
    trace = data.get("path")
    if data.get("kind") == "trace" and isinstance(trace, str) and not os.path.isabs(trace):
        data = {**data, "path": os.path.normpath(os.path.join(folder, trace))}   # the stack reads it from ROOT
    return data


def scale_rate(workload: dict, factor: float) -> dict:
    """The workload at `factor` × its arrival rate (a trace's `rate_scale`; every rate of a synthetic kind)."""
    out = dict(workload)
    keys = ("rate_scale",) if out.get("kind") == "trace" else ("rate", "to_rate", "peak_rate")
    if out.get("kind") == "trace":
        out.setdefault("rate_scale", 1.0)
    for key in keys:  # a value that is not a number is left for the stack schema to name
        if isinstance(out.get(key), (int, float)) and not isinstance(out.get(key), bool):
            out[key] = out[key] * factor
    return out


def set_workloads(values: dict, services: set[str] | None, workload: dict | None, rate_scale: float | None) -> dict:
    """Both sides' traffic: `--workload` replaces, `--rate-scale` multiplies, each compared service's workload."""
    out = copy.deepcopy(values)
    listed = out.get("services")
    for svc in listed if isinstance(listed, list) else []:   # anything else: the stack schema names it
        if not isinstance(svc, dict) or (services and not (isinstance(svc.get("name"), str)
                                                           and svc["name"] in services)):
            continue
        if workload is not None:
            svc["workload"] = copy.deepcopy(workload)
        if rate_scale is not None and isinstance(svc.get("workload"), dict):
            svc["workload"] = scale_rate(svc["workload"], rate_scale)
    return out

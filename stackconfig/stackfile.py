"""Merge an `engineProfile:` into one service of a Pulumi stack file, keeping its comments and layout
(`python -m preflight calibrate --write`)."""

from __future__ import annotations

from pathlib import Path

from stackconfig.load import ROOT, read_project
from stackconfig.roundtrip import stack_yaml
from validation.errors import InputError, Problem


def write_engine_profile(stack: str, service: str, profile: dict, root: Path | None = None) -> Path:
    """Set `services[name == service].engineProfile` in stacks/Pulumi.<stack>.yaml (keys merged over any there)."""
    root = root or ROOT
    project = read_project(root)
    path = root / project.get("stackConfigDir", ".") / f"Pulumi.{stack}.yaml"
    yaml = stack_yaml()  # round trip in the stack files' style: only the engineProfile lines change
    doc = yaml.load(path.read_text())
    services = ((doc or {}).get("config") or {}).get(f"{project['name']}:services")
    entry = next((s for s in services or [] if isinstance(s, dict) and s.get("name") == service), None)
    if entry is None:
        raise InputError([Problem("--service", service, f"expected a service defined in {path} itself "
                                  "(not only in Pulumi.yaml defaults)")])
    current = entry.get("engineProfile") or {}
    entry["engineProfile"] = {**current, **profile}
    with path.open("w") as fh:
        yaml.dump(doc, fh)
    return path

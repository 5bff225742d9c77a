"""`pip install .` ships every package the entry points import: `[tool.setuptools.packages.find] include` once
lacked "tuner*", so an installed `kserve-preflight check` died with ModuleNotFoundError (preflight.check imports
tuner.cli). Static and cheap: every import (also the ones inside functions) reachable from the entry points."""

from __future__ import annotations

import ast
import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(p for p in [*parts, base] if p)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)   # `from pkg import submodule`
    return {m for m in out if m and _file(m) is not None}


def _reachable(starts: list[str]) -> set[str]:
    seen, todo = set(), list(starts)
    while todo:
        module = todo.pop()
        if module in seen or _file(module) is None:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))   # parent packages run first
        todo.extend(_imports(module, _file(module)))
    return seen


def test_every_package_an_entry_point_imports_is_installed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tools = project["tool"]["setuptools"]
    include, modules = tools["packages"]["find"]["include"], set(tools.get("py-modules", []))
    starts = [target.split(":")[0] for target in project["project"]["scripts"].values()] + sorted(modules)
    reached = _reachable(starts)
    assert {"preflight.check", "tuner.cli", "policy.report", "simulation.engine"} <= reached   # the walk works
    missing = sorted({m.split(".")[0] for m in reached} - modules
                     - {m.split(".")[0] for m in reached if any(fnmatch.fnmatch(m, p) for p in include)})
    assert not missing, f"pyproject.toml [tool.setuptools.packages.find] include lacks {missing}"

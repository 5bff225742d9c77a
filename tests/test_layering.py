"""The simulator is a library the stack tools build on, never the other way round: nothing under simulation/,
catalog/ or validation/ imports a stack-level package (also not inside a function), so a replication loads only
those three (the result cache's fingerprint, simulation/result_cache.py) and no package cycle forms.
`simulation/__main__.py` is exempt: an entry script nothing imports (its `calibrate` is preflight's command)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("simulation", "catalog", "validation")
STACK_LEVEL = {"stackconfig", "manifests", "gate", "preflight", "tuner", "policy", "components", "program"}
ENTRY_SCRIPTS = {"simulation/__main__.py"}


def _imported_packages(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_the_simulator_imports_no_stack_level_package():
    found = {str(path.relative_to(ROOT)): sorted(_imported_packages(path) & STACK_LEVEL)
             for folder in LIBRARY for path in sorted((ROOT / folder).rglob("*.py"))
             if path.relative_to(ROOT).as_posix() not in ENTRY_SCRIPTS}
    assert {path: pkgs for path, pkgs in found.items() if pkgs} == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from stackconfig.load import load_stack\n")
    assert _imported_packages(path) & STACK_LEVEL == {"stackconfig"}

"""The project's own Python files, for the tests that read its source (layering, keys spelled once).

A virtualenv inside the tree (`policy/venv`, which the CrossGuard pack creates), dot-folders and caches are not
project code (git ignores them), so they are left out (review rev13-diff F5)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_PROJECT = {"venv", ".venv", "__pycache__", "node_modules"}


def project_sources(root: Path = ROOT, skip: frozenset[str] | set[str] = frozenset()) -> list[Path]:
    """The `*.py` files under `root`, sorted, outside the top-level folders in `skip` and outside NOT_PROJECT and
    dot-folders at any depth."""
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in skip or any(p in NOT_PROJECT or p.startswith(".") for p in parts[:-1]):
            continue
        out.append(path)
    return out

"""Output folders a command line is asked to write into, checked before any work starts."""

from __future__ import annotations

import os
from pathlib import Path

from validation.errors import InputError, Problem


def check_output_dir(flag: str, path: Path) -> Path:
    """`path` when it is, or can be created as, a folder this process may write into; otherwise an InputError
    naming `flag` (an existing file, /dev/null, a file on the way, a read-only folder)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError([Problem(flag, str(path), "expected a folder to write into; this is an existing file")])
    parent = path
    while not parent.exists():  # the nearest existing folder decides whether mkdir can succeed
        if parent.parent == parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise InputError([Problem(flag, str(path), f"expected a folder to write into; {parent} is a file")])
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError([Problem(flag, str(path), f"expected a folder to write into; {parent} is not writable")])
    return path

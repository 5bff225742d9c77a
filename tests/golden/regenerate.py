"""Rewrite the golden files: `python3 tests/golden/regenerate.py [NAME ...]` (all cases by default).

Only for a change that alters results on purpose; commit the new files on their own, saying why.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import DATA, TRACE, cases, golden_path  # noqa: E402


def main(names: list[str]) -> int:
    DATA.mkdir(exist_ok=True)
    for name, (produce, needs_trace) in sorted(cases().items()):
        if names and name not in names:
            continue
        if needs_trace and not TRACE.is_dir():
            print(f"{name}: skipped ({TRACE} not found)")
            continue
        golden_path(name).write_text(produce() + "\n", encoding="utf-8")
        print(f"{name}: written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

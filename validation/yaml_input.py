"""Reading a user's YAML file safely: every way a file can be unusable becomes a `Problem`, never an exception.

`read_yaml` reports an unreadable or non-UTF-8 file, a syntax error (file name, line and column), and nesting too
deep for the parser; `plain` turns what PyYAML built into JSON-compatible data (what the Pulumi CLI hands the
program), reporting what has no JSON form: non-string keys, `!!binary`, recursive anchors, huge integers, deep
nesting. Dates and timestamps become their ISO text, as the Pulumi CLI passes them on.
"""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path
from typing import Any

import yaml

from validation.errors import Problem

MAX_DEPTH = 64        # far deeper than any stack or scenario; PyYAML's recursive composer fails near 300
MAX_INT_DIGITS = 30   # beyond any count or size a config needs; float() overflows past 308 digits


def read_text(path: Path, key: str, problems: list[Problem]) -> str | None:
    """The file's UTF-8 text, or None with a problem (missing, unreadable, not UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(key, str(path), f"cannot read the file ({exc.strerror or exc})"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        problems.append(Problem(key, str(path), f"expected a UTF-8 text file; byte 0x{data[exc.start]:02x} at line "
                                f"{line} is not UTF-8 (save the file as UTF-8)"))
        return None


def parse_yaml(text: str, name: str, key: str, problems: list[Problem], multi: bool = False) -> Any:
    """YAML text → Python data; a syntax error names the file, line and column."""
    if _flow_depth(text) > MAX_DEPTH:  # PyYAML takes seconds to hit its recursion limit on these
        problems.append(Problem(key, name, f"expected YAML nested at most {MAX_DEPTH} levels deep"))
        return None
    try:
        return list(yaml.safe_load_all(text)) if multi else yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{name}, line {mark.line + 1}, column {mark.column + 1}" if mark else name
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append(Problem(key, where, f"expected valid YAML: {what}"))
    except RecursionError:
        problems.append(Problem(key, name, f"expected YAML nested at most {MAX_DEPTH} levels deep"))
    return None


def _flow_depth(text: str) -> int:
    """Deepest nesting of flow brackets ([ and {), quotes ignored: an upper bound that is cheap to compute."""
    depth = deepest = 0
    for char in re.sub(r"[^\[\]{}]", "", text):
        depth = depth + 1 if char in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def read_yaml(path: Path, key: str, problems: list[Problem], multi: bool = False) -> Any:
    """A YAML file as JSON-compatible data, or None with the problems recorded (`key` names the file in them)."""
    text = read_text(path, key, problems)
    if text is None:
        return None
    before = len(problems)
    data = parse_yaml(text, str(path), key, problems, multi)
    if len(problems) > before:
        return None
    return plain(data, "", problems)  # key paths inside the file; the caller names the file as the source


def plain(value: Any, path: str, problems: list[Problem], _depth: int = 0, _open: frozenset = frozenset()) -> Any:
    """`value` with only dict[str, …], list, str, int, float, bool and None; what cannot be is reported."""
    if _depth > MAX_DEPTH:
        problems.append(Problem(path, "(…)", f"expected YAML nested at most {MAX_DEPTH} levels deep"))
        return None
    if isinstance(value, (dict, list)):
        if id(value) in _open:
            problems.append(Problem(path, "(recursive anchor)", "expected plain data: an alias may not refer to "
                                    "a node that contains it"))
            return None
        inner = _open | {id(value)}
        if isinstance(value, list):
            return [plain(v, f"{path}[{i}]", problems, _depth + 1, inner) for i, v in enumerate(value)]
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                problems.append(Problem(f"{path}.{k!r}" if path else repr(k), v,
                                        f"expected a string key, got {type(k).__name__} {k!r} (quote it)"))
                continue
            out[k] = plain(v, f"{path}.{k}" if path else k, problems, _depth + 1, inner)
        return out
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if abs(value) >= 10 ** MAX_INT_DIGITS:
            problems.append(Problem(path, f"(an integer of about {int(value.bit_length() * math.log10(2)) + 1} "
                                    "digits)", f"expected a number of at most {MAX_INT_DIGITS} digits"))
            return None
        return value
    if isinstance(value, float):
        return value  # .inf and .nan are left to the typed readers, which name the key and the range
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        problems.append(Problem(path, "(!!binary)", "expected text, a number, a list or a mapping (binary data "
                                "has no JSON form)"))
        return None
    problems.append(Problem(path, repr(value), "expected plain YAML data"))
    return None

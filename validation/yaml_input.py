"""Reading a user's YAML file safely: every way a file can be unusable becomes a `Problem`, never an exception.

`read_yaml` reports an unreadable, oversized or non-UTF-8 file, a syntax error (file name, line and column),
nesting too deep for the parser, aliases that expand past go-yaml's bound and a mapping key written twice (both
lines named); `plain` turns what PyYAML built into JSON-compatible data (what the Pulumi CLI hands the program),
reporting what has no JSON form: non-string keys, `!!binary`, recursive anchors, huge integers, deep nesting.

Plain scalars resolve as the Pulumi CLI resolves them: it reads stack files with go-yaml (gopkg.in/yaml.v2,
sdk/go/common/encoding/marshal.go) into `interface{}`. go-yaml's `resolve()` (resolve.go, identical in v2 and v3
for numbers) reads `5e-1`, `1E3`, `+.5`, `1.0e3` and `08` as floats, where PyYAML's YAML 1.1 float pattern leaves
them strings; it has no base-60 floats (`1:30.5` is a string) and hands a date-time to `interface{}` as its text
(decode.go, "for backward compatibility"). Integers, booleans (YAML 1.1 `yes`/`on` stay booleans, as in v2),
nulls and quoted scalars are PyYAML's own.
"""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path
from typing import Any

import yaml

from validation.errors import Problem
from validation.paths import open_regular

MAX_DEPTH = 64        # far deeper than any stack or scenario; PyYAML's recursive composer fails near 300
MAX_INT_DIGITS = 30   # beyond any count or size a config needs; float() overflows past 308 digits
MAX_BYTES = 512 * 1024  # >100x the largest shipped stack file; pure-Python PyYAML parses dense YAML at ~0.2 MB/s
# go-yaml's "excessive aliasing" rule (yaml.v3 decode.go `allowedAliasRatio`; the same in yaml.v2, which the Pulumi
# CLI uses): past 100 alias-expanded nodes and 1,000 nodes in all, at most 99% of the nodes may come from aliases up
# to 400,000 nodes, falling linearly to 10% at 4,000,000.
ALIAS_RATIO_LOW, ALIAS_RATIO_HIGH = 400_000, 4_000_000

_FLOAT, _STR = "tag:yaml.org,2002:float", "tag:yaml.org,2002:str"
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")  # go-yaml's yamlStyleFloat
_GO_DOT_FLOAT = re.compile(r"\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?")    # strconv.ParseFloat, leading '.'
_GO_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]*|0[bB][01]+|[1-9][0-9]*)")  # strconv.ParseInt(s, 0, 64)


def _go_float(text: str) -> bool:
    """Whether go-yaml's `resolve()` reads this plain scalar as a float (not as an int, bool, null or string)."""
    if text[:1] == ".":
        ok = _GO_DOT_FLOAT.fullmatch(text) is not None
        plain = text.replace("_", "")
    elif text[:1] in tuple("+-0123456789"):
        plain = text.replace("_", "")  # go-yaml drops underscores before trying int, then float
        ok = _GO_FLOAT.fullmatch(plain) is not None and _GO_INT.fullmatch(plain) is None
    else:
        return False
    return ok and math.isfinite(float(plain))  # strconv.ParseFloat's range error leaves a string


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with go-yaml's float and timestamp resolution (module docstring)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        tag = super().resolve(kind, value, implicit)
        if kind is not yaml.ScalarNode or not implicit[0]:
            return tag
        if tag == _FLOAT and ":" in value:  # YAML 1.1 base 60: a string to go-yaml
            return _STR
        if tag == "tag:yaml.org,2002:timestamp":
            return _STR
        if tag == _STR and _go_float(value):
            return _FLOAT
        return tag


def _allowed_alias_ratio(nodes: int) -> float:
    if nodes <= ALIAS_RATIO_LOW:
        return 0.99
    if nodes >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


def excessive_aliasing(root: yaml.Node) -> int | None:
    """The node count at which expanding `root`'s aliases breaks go-yaml's rule, or None when it does not.

    Walks the composed graph (where an alias is the anchored node itself) the way a decoder expands it; every
    visit of a node already seen is alias-driven. Stops descending at MAX_DEPTH (`plain` reports deeper nesting),
    so recursive anchors end too."""
    seen: set[int] = set()
    nodes = aliased = 0
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 0)]
    while stack:
        node, in_alias, depth = stack.pop()
        in_alias = in_alias or id(node) in seen
        seen.add(id(node))
        nodes += 1
        aliased += in_alias
        if aliased > 100 and nodes > 1000 and aliased / nodes > _allowed_alias_ratio(nodes):
            return nodes
        if depth < MAX_DEPTH and isinstance(node, yaml.MappingNode):
            stack.extend((n, in_alias, depth + 1) for pair in node.value for n in pair)
        elif depth < MAX_DEPTH and isinstance(node, yaml.SequenceNode):
            stack.extend((n, in_alias, depth + 1) for n in node.value)
    return None


def read_text(path: Path, key: str, problems: list[Problem], max_bytes: int = MAX_BYTES,
              what: str = "a stack, scenario or workload file is a few KiB") -> str | None:
    """The file's UTF-8 text, or None with a problem (missing, unreadable, not a regular file, over `max_bytes`,
    not UTF-8). The one reader of a user's input file: a FIFO or a device is refused before it is read."""
    try:
        with open_regular(path) as fh:
            data = fh.read(max_bytes + 1)  # never more: a huge file is refused without reading it all
    except OSError as exc:
        problems.append(Problem(key, str(path), f"cannot read the file ({exc.strerror or exc})"))
        return None
    if len(data) > max_bytes:
        problems.append(Problem(key, str(path), f"expected a file of at most {_limit(max_bytes)}; this one is "
                                f"{_size(Path(path))} ({what})"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        problems.append(Problem(key, str(path), f"expected a UTF-8 text file; byte 0x{data[exc.start]:02x} at line "
                                f"{line} is not UTF-8 (save the file as UTF-8)"))
        return None


def _limit(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n // 1024} KiB"


def _size(path: Path) -> str:
    try:
        return f"{path.stat().st_size / 2**20:.1f} MiB"
    except OSError:
        return "larger"


def duplicate_keys(root: yaml.Node, name: str, key: str, problems: list[Problem]) -> None:
    """Each mapping key written twice, as go-yaml v3 refuses it (decode.go `mapping`, uniqueKeys: "mapping key
    already defined at line N"; keys compared by kind and text): PyYAML would silently keep the last value.
    Walks the composed graph once per node (an alias is its anchored node), MAX_DEPTH deep."""
    seen: set[int] = set()
    found: list[tuple[int, Problem]] = []
    stack: list[tuple[yaml.Node, str, int]] = [(root, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if id(node) in seen or depth > MAX_DEPTH:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for k, v in node.value:
                label = k.value if isinstance(k, yaml.ScalarNode) else None
                at = f"{path}.{label}" if path else str(label)
                if label is not None and label in first:
                    line = k.start_mark.line + 1
                    found.append((line, Problem(key, f"{name}, line {line}: {at}", f"expected each key once in a "
                                                f"mapping; {label!r} is already defined at line {first[label]}, and "
                                                "one of the two values would be silently lost (go-yaml v3 refuses "
                                                "it: decode.go, 'mapping key already defined')")))
                elif label is not None:
                    first[label] = k.start_mark.line + 1
                stack.append((v, at, depth + 1))
    problems.extend(p for _, p in sorted(found, key=lambda f: f[0]))


def parse_yaml(text: str, name: str, key: str, problems: list[Problem], multi: bool = False) -> Any:
    """YAML text → Python data; a syntax error names the file, line and column."""
    if len(text) > MAX_BYTES:
        problems.append(Problem(key, name, f"expected YAML of at most {MAX_BYTES // 1024} KiB"))
        return None
    if _flow_depth(text) > MAX_DEPTH:  # PyYAML takes seconds to hit its recursion limit on these
        problems.append(Problem(key, name, f"expected YAML nested at most {MAX_DEPTH} levels deep"))
        return None
    loader = _Loader(text)
    try:
        nodes = []
        if multi:
            while loader.check_node():
                nodes.append(loader.get_node())
        else:
            nodes.append(loader.get_single_node())
        for node in nodes:  # checked before anything is built: PyYAML's merge keys (<<) copy on construction
            at = excessive_aliasing(node) if node is not None else None
            if at is not None:
                problems.append(Problem(key, name, f"expected YAML whose aliases (*name) expand to at most 99% of "
                                        f"its nodes past 1,000 (go-yaml's 'excessive aliasing' bound, which the "
                                        f"Pulumi CLI applies to stack files); these had expanded to {at:,} nodes "
                                        "when the rule stopped them"))
                return None
        before = len(problems)
        for node in nodes:
            if node is not None:
                duplicate_keys(node, name, key, problems)
        if len(problems) > before:
            return None
        docs = [loader.construct_document(node) if node is not None else None for node in nodes]
        return docs if multi else docs[0]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{name}, line {mark.line + 1}, column {mark.column + 1}" if mark else name
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append(Problem(key, where, f"expected valid YAML: {what}"))
    except RecursionError:
        problems.append(Problem(key, name, f"expected YAML nested at most {MAX_DEPTH} levels deep"))
    finally:
        loader.dispose()
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

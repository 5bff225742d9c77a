"""Typed, path-aware reading of YAML/JSON mappings that collects every problem instead of stopping at the first.

    problems: list[Problem] = []
    svc = Section(data, "services[0]", problems)
    cc = svc.int("containerConcurrency", default=1, min=0, max=1000)
    mode = svc.choice("deploymentMode", ["Knative", "Standard"], default="Knative")
    svc.done()                      # reports unknown keys (typos) with a suggestion
    if problems: raise InputError(problems)

Readers never raise on bad input: they record a Problem and return the default so parsing can go on
and every mistake is reported in one run.
"""

from __future__ import annotations

import difflib
import math
from decimal import Decimal
from typing import Any, Iterable

from validation.errors import Problem

def _is_int(value: Any) -> bool:
    # YAML/JSON integers; integral floats too (Pulumi hands numbers over as floats), never bools.
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:  # an int of 309+ digits has no float: math.isfinite raises OverflowError
        return math.isfinite(value)
    except OverflowError:
        return False


def _range_text(kind: str, min: float | None, max: float | None, min_exclusive: bool) -> str:
    if min is not None and max is not None and not min_exclusive:
        return f"expected {kind} between {min} and {max}"
    parts = []
    if min is not None:
        parts.append(f"{'>' if min_exclusive else '>='} {min}")
    if max is not None:
        parts.append(f"<= {max}")
    return f"expected {kind}" + (" " + " and ".join(parts) if parts else "")


def quantity_text(value: Any) -> str | None:
    """An unquoted YAML number as the quantity string it stands for (3 → "3", 3.0 → "3", 0.5 → "0.5", 1e-3 →
    "0.001": plain decimals, which formats.QUANTITY accepts, never an exponent); None for anything else (a bool, a
    negative or non-finite number, a non-number)."""
    if not _is_number(value) or value < 0:
        return None
    if _is_int(value):
        return str(int(value))
    text = format(Decimal(repr(value)), "f")  # the float's shortest decimal, without an exponent
    return text.rstrip("0").rstrip(".") if "." in text else text


class Section:
    """A mapping being read at a key path; unknown keys are reported by `done()`."""

    def __init__(self, data: Any, path: str, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        self._seen: set[str] = set()
        if data is None:
            data = {}
        if not isinstance(data, dict):
            problems.append(Problem(path or "(top level)", data, "expected a mapping of keys to values"))
            data = {}
        self.data: dict[str, Any] = data

    # -- plumbing -------------------------------------------------------------------------------
    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        self._seen.add(key)
        return self.data.get(key, default)

    def problem(self, key: str, value: Any, allowed: str) -> None:
        self.problems.append(Problem(self.key_path(key), value, allowed))

    def _value(self, key: str, required: bool) -> Any:
        """The raw value, or None when absent (a required key that is absent is a problem)."""
        self._seen.add(key)
        value = self.data.get(key)
        if value is None and required:
            self.problems.append(Problem(self.key_path(key), None, "this key is required"))
        return value

    # -- typed readers ----------------------------------------------------------------------------
    def int(self, key: str, default: Any = None, *, min: int | None = None, max: int | None = None,
            required: bool = False) -> Any:
        value = self._value(key, required)
        if value is None:
            return default
        if not _is_int(value) or (min is not None and value < min) or (max is not None and value > max):
            self.problem(key, value, _range_text("an integer", min, max, False))
            return default
        return int(value)

    def float(self, key: str, default: Any = None, *, min: float | None = None, max: float | None = None,
              min_exclusive: bool = False, required: bool = False) -> Any:
        value = self._value(key, required)
        if value is None:
            return default
        low_bad = _is_number(value) and min is not None and (value <= min if min_exclusive else value < min)
        if not _is_number(value) or low_bad or (max is not None and value > max):
            self.problem(key, value, _range_text("a number", min, max, min_exclusive))
            return default
        return float(value)

    def str(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        value = self._value(key, required)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            self.problem(key, value, "expected a non-empty string")
            return default
        return value

    def quantity(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        """A Kubernetes quantity (`cpu`, `memory`) as the string a manifest carries. Kubernetes reads the field as
        int-or-string (resource.Quantity), so an unquoted YAML number is that quantity: `cpu: 3` is "3", `memory:
        536870912` is "536870912", `cpu: 0.5` is "0.5", exactly what the quoted form gives. A bool, a negative or
        a non-finite number is refused; the string's own format is the caller's check (formats.QUANTITY)."""
        value = self._value(key, required)
        if value is None:
            return default
        if isinstance(value, str) and value.strip():
            return value
        text = quantity_text(value)
        if text is None:
            self.problem(key, value, 'expected a Kubernetes quantity: a string such as "500m" or "24Gi", or a '
                         "number of at least 0 (cores or bytes)")
            return default
        return text

    def bool(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        value = self._value(key, required)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(key, value, "expected true or false")
            return default
        return value

    def choice(self, key: str, allowed: Iterable[str], default: Any = None, *, required: bool = False) -> Any:
        allowed = list(allowed)
        value = self._value(key, required)
        if value is None:
            return default
        if value not in allowed:
            self.problem(key, value, "expected one of " + ", ".join(repr(a) for a in allowed))
            return default
        return value

    def section(self, key: str, *, required: bool = False) -> "Section":
        return Section(self._value(key, required), self.key_path(key), self.problems)

    def sections(self, key: str, *, required: bool = False) -> list["Section"]:
        value = self._value(key, required)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(key, value, "expected a list")
            return []
        return [Section(item, f"{self.key_path(key)}[{i}]", self.problems) for i, item in enumerate(value)]

    def str_list(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        value = self._value(key, required)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(key, value, "expected a list of non-empty strings")
            return default
        return list(value)

    def str_map(self, key: str, default: Any = None) -> Any:
        value = self._value(key, False)
        if value is None:
            return default
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in value.items()):
            self.problem(key, value, 'expected a mapping of strings to strings (quote numbers: "30s", "2")')
            return default
        return dict(value)

    # -- finishing --------------------------------------------------------------------------------
    def done(self) -> None:
        """Report every key that no reader asked for: almost always a typo."""
        known = sorted(self._seen)
        for key in self.data:
            if key in self._seen:
                continue
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "allowed keys: " + ", ".join(known)
            self.problems.append(Problem(self.key_path(str(key)), self.data[key], f"unknown key; {hint}"))

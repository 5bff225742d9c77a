"""Triton's option values as tritonserver reads them (triton-inference-server/server `src/command_line_parser.cc`
`Parse`), and the Triton release an image runs.

- An integer is `std::stoi` (leading spaces, a sign, digits; whatever follows the digits is ignored, so '8080abc' is
  8080; no digits or beyond a C int: exit), a 64-bit one `std::stoll`; a boolean is true/on/1 or false/off/0 in any
  case (`ParseOption<bool>`); `--model-control-mode`, `--rate-limit`, `--trace-level` and gRPC's compression level
  are matched in any case, `--log-format` exactly (`default` or `ISO8601`).
- The values inside `--trace-config` and `--metrics-config` settings are not checked beyond their form.
"""

from __future__ import annotations

import re
from typing import Callable

KSERVE_RELEASE = (23, 5)                # kserve-tritonserver's image, nvcr.io/nvidia/tritonserver:23.05-py3
_C_INTEGER = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def c_int(text: str, bits: int = 32) -> int:
    """`std::stoi` (bits 32) or `std::stoll` (64): digits after optional spaces and a sign, the rest ignored;
    ValueError where it throws (no digits, out of range)."""
    match = _C_INTEGER.match(text)
    if match is None:
        raise ValueError(text)
    value = int(match.group(1))
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(text)
    return value


def c_bool(text: str) -> bool:
    """`ParseOption<bool>`: true/on/1 or false/off/0, in any case."""
    lowered = text.lower()
    if lowered in ("true", "on", "1"):
        return True
    if lowered in ("false", "off", "0"):
        return False
    raise ValueError(text)


def int_bool(text: str) -> int:
    """`ParseIntBoolOption` (`--log-verbose`): true → 1, false → 0 in any case, else `std::stoi`."""
    named = {"true": 1, "false": 0}
    return named[text.lower()] if text.lower() in named else c_int(text)


def one_of(*names: str, any_case: bool = True) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.lower() if any_case else text
        if value not in names:
            raise ValueError(text)
        return value
    return parse


def ranged(low: int | None = None, high: int | None = None, bits: int = 32) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = c_int(text, bits)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(text)
        return value
    return parse


def nonempty(text: str) -> str:
    if not text:
        raise ValueError(text)
    return text


def setting(text: str) -> str:
    """`--metrics-config`: `<setting>=<value>`, both non-empty, no ',' before the '='."""
    name, eq, value = text.partition("=")
    if not eq or not name or not value or "," in name:
        raise ValueError(text)
    return text


def trace_setting(text: str) -> str:
    """`--trace-config`: `[<mode>,]<setting>=<value>`, the mode `triton` or `opentelemetry` in any case."""
    mode, comma, rest = text.partition(",") if "," in text.partition("=")[0] else ("", "", text)
    if comma and mode.lower() not in ("triton", "opentelemetry"):
        raise ValueError(text)
    return setting(rest) and text


def as_given(text: str) -> str:
    return text


def release_of(image: str | None) -> tuple[int, int] | None:
    """The Triton release (YY, MM) an image runs: its tag `25.08-py3` → (25, 8); KServe's 23.05 without an image;
    None when the tag names none (a digest alone, `latest`)."""
    if not image:
        return KSERVE_RELEASE
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    match = re.match(r"(\d{2})\.(\d{2})(?:-|$)", tag)
    return (int(match.group(1)), int(match.group(2))) if match else None


def release_name(version: tuple[int, int]) -> str:
    return f"{version[0]:02d}.{version[1]:02d}"

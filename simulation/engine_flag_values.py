"""Flag value parsers that follow each server's own: vLLM and KServe parse with argparse (`type=int` is Python's
`int()`, which takes '1_024', ' 8' and non-ASCII digits); TGI's launcher parses with clap, which calls Rust's
`FromStr`: ASCII digits only (an optional leading '+'), no '_', no spaces, and the type's range (`u16` for a port,
`u32`, `usize`); `f32` takes decimals and exponents, no '_'; a `bool` value is exactly `true` or `false` (clap's
BoolValueParser). Each raises ValueError for a value the server refuses.
"""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Callable

_HRI = re.compile(r"(\d+(?:\.\d+)?)([kmgtKMGT])")
_RUST_UINT = re.compile(r"\+?[0-9]+")                                    # `[0-9]`: ASCII digits only
_RUST_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                         re.IGNORECASE)


def human_readable_int(text: str) -> int:
    """vLLM's `human_readable_int`: '16k' → 16000, '16K' → 16384, '2048' → 2048; ValueError otherwise (also for a
    decimal one too large for a float, where vLLM's own int(inf) fails with OverflowError)."""
    text = text.strip()
    match = _HRI.fullmatch(text)
    if not match:
        return int(text)
    number, suffix = match.groups()
    if suffix.islower():
        value = float(number) * 1000 ** ("kmgt".index(suffix) + 1)
        if not math.isfinite(value):
            raise ValueError(f"{text!r} is too large")
        return int(value)
    return int(number) * 1024 ** ("KMGT".index(suffix) + 1)   # int(): no decimals with a binary suffix


def rust_uint(text: str, bits: int = 64) -> int:
    """Rust's `u16`/`u32`/`u64`/`usize` `FromStr` as clap calls it; ValueError where it errs."""
    if not _RUST_UINT.fullmatch(text) or int(text) >= 2 ** bits:
        raise ValueError(text)
    return int(text)


def rust_float(text: str) -> float:
    """Rust's `f32` `FromStr` (decimal or exponent form, inf/nan); ValueError where it errs."""
    if not _RUST_FLOAT.fullmatch(text):
        raise ValueError(text)
    return float(text)


def at_least(low: int, read: Callable[[str], int]) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = read(text)
        if value < low:
            raise ValueError(text)
        return value
    return parse


def between(read: Callable[[str], float], low: float, high: float, high_open: bool = False) -> Callable:
    def parse(text: str) -> float:
        value = read(text)
        if not (low < value < high if high_open else low < value <= high):
            raise ValueError(text)
        return value
    return parse


def tokens(text: str) -> int:
    value = human_readable_int(text)
    if value < 1:   # newer vLLM's -1/'auto' fit max_model_len to the KV cache at start-up: not simulated
        raise ValueError
    return value


def vllm_use_v1(text: str) -> str:
    return "v1" if int(text) else "v0"


def clap_bool(text: str) -> bool:
    if text not in ("true", "false"):   # clap's BoolValueParser: no other case or spelling
        raise ValueError
    return text == "true"


def one_of(read: Callable[[str], int], choices: tuple) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = read(text)
        if value not in choices:
            raise ValueError(text)
        return value
    return parse


def exactly(read: Callable[[str], int], wanted: int) -> Callable[[str], int]:
    return one_of(read, (wanted,))


def port_number(read: Callable[[str], int]) -> Callable[[str], int]:
    """A port number; whether the pod has it free depends on its deployment mode (`taken_ports`)."""
    def parse(text: str) -> int:
        value = read(text)
        if not 0 <= value <= 65535:
            raise ValueError(text)
        return value
    return parse


def every_address(text: str) -> str:
    """0.0.0.0 or :: (any spelling of the unspecified address); ValueError otherwise."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(text) from None
    if not address.is_unspecified:
        raise ValueError(text)
    return text


def tgi_hostname(text: str) -> str:
    """TGI's router: a hostname that parses as an IP is listened on; any other falls back to 0.0.0.0 ('Invalid
    hostname, defaulting to 0.0.0.0', router/src/server.rs), as the pod's own HOSTNAME does."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return text
    return every_address(text)


def swap_gib(text: str) -> float:
    value = float(text)                   # argparse type=float
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


def device_list(text: str) -> tuple:
    return tuple(text.split(","))


def choice(*names: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in names:
            raise ValueError(text)
        return text
    return parse

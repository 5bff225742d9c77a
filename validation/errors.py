"""User-input errors: every problem names the key path, the bad value and what is allowed."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NoReturn


@dataclass(frozen=True)
class Problem:
    """One mistake in a config or scenario file."""

    path: str
    value: Any
    allowed: str

    def __str__(self) -> str:
        return f"{self.path}: got {shown(self.value)}; {self.allowed}"


def shown(value: Any, limit: int = 200) -> str:
    """`repr(value)`, shortened: a fuzzed or pasted value may be megabytes long or an int too big to print."""
    try:
        text = repr(value)
    except ValueError:  # int of more than sys.get_int_max_str_digits() digits
        text = f"(an integer of about {int(value.bit_length() * 0.30103) + 1} digits)"
    return text if len(text) <= limit else text[:limit - 20] + f"… ({len(text)} characters)"


class InputError(Exception):
    """A config or scenario that cannot be used; raised before anything is simulated or registered."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = list(problems)
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" in {self.source}" if self.source else ""
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''}{where}:"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


def exit_with(error: InputError, code: int = 2) -> NoReturn:
    """Print a user's mistake without a traceback and exit with status 2 (the CLI convention)."""
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(code)

"""What every command line does with an error: a user's mistake is one message and exit status 2; anything else
is a bug, reported as one line with a hint to report it (exit status 3), never a bare traceback.

Set KSERVE_PREFLIGHT_DEBUG=1 to see the traceback of an unexpected error.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from validation.errors import InputError, exit_with

ISSUES_HINT = ("this is a bug in kserve-preflight, not in your input: please report it with the command you ran "
               "and the files it read (KSERVE_PREFLIGHT_DEBUG=1 shows the traceback)")


def unexpected_error_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"internal error: {type(exc).__name__}{': ' + text[:300] if text else ''} — {ISSUES_HINT}"


INTERRUPTED, TERMINATED = 130, 128 + signal.SIGTERM   # the exit statuses of Ctrl-C and SIGTERM, as shells give
SIGNAL_EXITS = (INTERRUPTED, TERMINATED)


class Terminated(BaseException):
    """SIGTERM reached the command (`kill PID`, a supervisor, a CI runner): raised in the main thread so that the
    `finally` blocks run, the local worker processes among them (simulation/local_executor.py `close`)."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def guarded(main: Callable[..., int]) -> Callable[..., int]:
    """Wrap a CLI `main`: InputError → exit 2 with the problems; KeyboardInterrupt → exit 130; SIGTERM → exit
    143 (128 + 15) once the `finally` blocks have stopped the workers; any other exception → one line on stderr
    and exit 3."""
    @functools.wraps(main)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        try:
            previous = signal.signal(signal.SIGTERM, _terminated)
        except ValueError:   # not the main thread: signals are not ours to handle
            previous = None
        try:
            return main(*args, **kwargs)
        except InputError as err:
            exit_with(err)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise SystemExit(INTERRUPTED) from None
        except Terminated:
            print("terminated (SIGTERM): the simulations were stopped", file=sys.stderr)
            raise SystemExit(TERMINATED) from None
        except Exception as exc:  # noqa: BLE001 — the point: no traceback reaches a user
            if os.environ.get("KSERVE_PREFLIGHT_DEBUG"):
                raise
            print(f"error: {unexpected_error_line(exc)}", file=sys.stderr)
            raise SystemExit(3) from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    return wrapper


@contextmanager
def progress_bar(description: str, after_s: float = 2.0, stream: Any = None) -> Iterator[Callable[[float], None]]:
    """A callback `update(fraction)` that shows a rich progress bar on stderr once a run has taken `after_s`
    seconds, only when stderr is a terminal (never in logs, pipes or tests); removed when done."""
    stream = stream or sys.stderr
    start = time.monotonic()
    state: dict[str, Any] = {}

    def update(fraction: float) -> None:
        if "bar" not in state:
            if time.monotonic() - start < after_s or not stream.isatty():
                return
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                           TimeElapsedColumn(), TimeRemainingColumn(), console=Console(file=stream), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task(description, total=1.0)
        state["bar"].update(state["task"], completed=fraction)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].stop()

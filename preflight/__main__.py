"""`python -m preflight check --stack dev`: the offline preflight of a stack (preflight/check.py)."""

import atexit
import os
import sys
import time

STARTED = time.perf_counter()  # --timings counts the imports below as the first stage

import simulation  # noqa: E402,F401  (first: the result cache notes the simulator's files as this run imports them)
from preflight.check import main  # noqa: E402
from policy.report import _close_event_loop  # noqa: E402
from validation.cli import SIGNAL_EXITS  # noqa: E402


def run() -> None:
    """The `kserve-preflight` console command (and `python -m preflight`)."""
    try:
        status = main(started=STARTED)
    except BaseException as stop:
        _close_event_loop()
        if isinstance(stop, SystemExit) and stop.code in SIGNAL_EXITS:
            # Ctrl-C or SIGTERM (validation/cli.py `guarded`): the message is out and the workers are stopped
            # (their `finally` ran). Exit at once: the interpreter's teardown joins the pool's manager thread and
            # children with no timeout (under load one such exit once took over 10 s).
            _flush()
            os._exit(stop.code)
        raise
    exit_now(status)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError):  # e.g. `| head` closed the pipe: nothing left to say
            pass


def exit_now(status: int) -> None:
    """Exit once the report is out, without the interpreter's teardown: freeing the Pulumi SDK and providers'
    modules object by object takes ~0.3 s that nobody needs. Output is flushed and the atexit handlers run
    (the worker pool is already shut down); only the deallocation is skipped."""
    _flush()
    atexit._run_exitfuncs()
    os._exit(status)


if __name__ == "__main__":
    run()

"""`python -m preflight check --stack dev`: the offline preflight of a stack (preflight/check.py)."""

import sys
import time

STARTED = time.perf_counter()  # --timings counts the imports below as the first stage

from preflight.check import main  # noqa: E402
from policy.report import _close_event_loop  # noqa: E402


def run() -> None:
    """The `kserve-preflight` console command (and `python -m preflight`)."""
    try:
        status = main(started=STARTED)
    finally:
        _close_event_loop()
    sys.exit(status)


if __name__ == "__main__":
    run()

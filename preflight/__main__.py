"""`python -m preflight check --stack dev`: the offline preflight of a stack (preflight/check.py)."""

import sys

from preflight.check import main
from policy.report import _close_event_loop


def run() -> None:
    """The `kserve-preflight` console command (and `python -m preflight`)."""
    try:
        status = main()
    finally:
        _close_event_loop()
    sys.exit(status)


if __name__ == "__main__":
    run()

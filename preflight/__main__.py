"""`python -m preflight check --stack dev`: the offline preflight of a stack (preflight/check.py)."""

import sys

from preflight.check import main
from policy.report import _close_event_loop

try:
    status = main()
finally:
    _close_event_loop()
sys.exit(status)

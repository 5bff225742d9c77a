"""CrossGuard entry point: `pulumi preview --policy-pack policy` runs this file. It ONLY constructs the pack.

`PolicyPack(...)` starts the analyzer's gRPC server and blocks, so never run or import this from tests or by hand;
the human-readable report is `python -m policy.report --stack prod` (docs/policy.md).
"""

import sys
from pathlib import Path

# The CLI starts the analyzer inside policy/; the rules also read the project's catalog, so put the root first.
ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policy.pack import PACK_NAME, policies  # noqa: E402

PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.ADVISORY)

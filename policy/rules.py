"""The platform rules, written once as pure functions over the resources a Pulumi program registers.

Each `Rule` has an id, a severity (mandatory blocks, advisory warns), the guide it encodes, and a `check(res, ctx)`
that yields one message per problem, each naming what to change. The same rules run in three places:

- pytest (`tests/policy/`), over the resources the real program registers under mocks (offline/__init__.py);
- the CrossGuard pack (`policy/pack.py`, wrapped by `policy/__main__.py` for `pulumi preview --policy-pack policy`);
- the report command (`python -m policy.report --stack prod`).

A resource is seen the way CrossGuard sees it: the type token, the camelCase input props (numbers may be floats,
gotcha 2 of ../shared/reference/pulumi-offline-testing.md; nested values may be read-only Mapping/Sequence
proxies) and the options that matter here (`protect`, `ignore_changes`). Rules marked `stack=True` need the other
resources too (the node group's taint and GPU capacity, the stack's environment, the HPA of a Standard-mode
service); CrossGuard runs those as stack policies, the rest as resource policies.

Guide references ("000 §9.3") point at ../shared/guides/: 000 = 429·OOM guide (000_a00cd7db9fb71cbf.txt),
001 = 503·cold-start guide (001_d4c8dfe36be99b5d.txt), 004 = LLM autoscaling guide (004_dc55575d102eb0ac.txt).
"""

from __future__ import annotations

from typing import Iterable, Optional

import policy.rules_scaling  # noqa: F401  registers the InferenceService rules first: how they scale,
import policy.rules_isvc_pod  # noqa: F401  their pods,
import policy.rules_server  # noqa: F401  what their servers admit,
import policy.rules_platform  # noqa: F401  then the platform rules
from policy.registry import RULES, Rule
from policy.resources import ADVISORY, MANDATORY, Context, Resource, Violation, duration_s
from validation.kubernetes import image_pinned, tolerates

# What the pack, the report and the tests read from here.
__all__ = ["ADVISORY", "MANDATORY", "RULES", "RULES_BY_ID", "Context", "Resource", "Rule", "Violation", "duration_s",
           "evaluate", "image_pinned", "mandatory", "tolerates"]

# ---------------------------------------------------------------------------------------------------------------
# Running them
# ---------------------------------------------------------------------------------------------------------------
RULES_BY_ID = {r.id: r for r in RULES}
assert len(RULES_BY_ID) == len(RULES), "duplicate rule id"


def evaluate(resources: Iterable[Resource], rules: Optional[Iterable[Rule]] = None) -> list[Violation]:
    """Every rule over every resource, with the whole stack as context."""
    resources = list(resources)
    ctx = Context.of(resources)
    out: list[Violation] = []
    for r in (RULES if rules is None else list(rules)):
        for res in resources:
            out += r.run(res, ctx)
    return out


def mandatory(violations: Iterable[Violation]) -> list[Violation]:
    return [v for v in violations if v.mandatory]

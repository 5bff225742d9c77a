"""Per-resource waivers: a service's `policyWaivers: {<rule id>: <reason>}` (stackconfig/services.py), rendered as
the InferenceService annotation `preflight.kserve.io/policy-waivers` (JSON; off the pods like every
`preflight.kserve.io/*` key), so every runner reads the same thing: `Rule.run` marks a finding on that resource
`waived` with the reason instead of dropping it; `mandatory()` and the exit statuses leave waived findings out; the
report, `preflight check` and `tests/policy/test_stacks.py` list them as waived; the CrossGuard pack does not report
them. The report and `preflight check` refuse (exit 2) a waiver of an unknown rule or of one that may not be
waived (policy/keys.py `waiver_problems`); the loader refuses an empty reason.
"""

from __future__ import annotations

import json

from policy.resources import ANN, Resource, _map

WAIVER_ANNOTATION = ANN + "policy-waivers"
# Pod Security Standards: no reason makes a host-network or privileged pod safe for its neighbours.
NOT_WAIVABLE = frozenset({"k8s-no-host-network", "k8s-no-privilege-escalation", "device-plugin-not-privileged"})


def waivers_of(res: Resource) -> dict[str, str]:
    """The resource's waivers (rule id -> reason); {} when it has none or the annotation is not a JSON mapping."""
    raw = _map(_map(res.props.get("metadata")).get("annotations")).get(WAIVER_ANNOTATION)
    try:
        data = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v).strip() for k, v in data.items() if str(v).strip()}


def waiver_for(rule_id: str, res: Resource) -> str:
    """The reason `res` waives `rule_id` with, or "" (no waiver, or a rule that may not be waived)."""
    return "" if rule_id in NOT_WAIVABLE else waivers_of(res).get(rule_id, "")

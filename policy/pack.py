"""CrossGuard policies built from `policy.rules`: one policy per rule, enforcement from the rule's severity.

Rules that only look at one resource become `ResourceValidationPolicy` (checked on inputs before each create or
update, so a mandatory one blocks the change); rules that need the rest of the stack (`Rule.stack`) become
`StackValidationPolicy` (checked once all resources are registered: they fail `preview`, but during `up` they
can only fail the update afterwards, so run `pulumi preview --policy-pack policy` first).

Building these objects starts nothing; only `PolicyPack(...)` (in `policy/__main__.py`) starts the gRPC server,
so tests import `policies()` and call each policy's `validate(args, report_violation)` directly.
"""

from __future__ import annotations

from typing import Any, Iterable

from pulumi_policy import (EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy,
                           StackValidationArgs, StackValidationPolicy)

from policy.rules import MANDATORY, RULES, Context, Resource, Rule

PACK_NAME = "kserve-preflight"


def enforcement(rule: Rule) -> EnforcementLevel:
    return EnforcementLevel.MANDATORY if rule.severity == MANDATORY else EnforcementLevel.ADVISORY


def _resource(resource_type: str, name: str, props: Any, urn: str, opts: Any) -> Resource:
    return Resource(resource_type, name, props, urn or "", bool(getattr(opts, "protect", False)),
                    tuple(getattr(opts, "ignore_changes", None) or ()))


def resource_validator(rule: Rule):
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        res = _resource(args.resource_type, args.name, args.props, args.urn, args.opts)
        for v in rule.run(res, Context()):
            if not v.waived:   # a service's policyWaivers (policy/waivers.py)
                report_violation(v.message, args.urn)
    return validate


def stack_validator(rule: Rule):
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [_resource(r.resource_type, r.name, r.props, r.urn, r.opts) for r in args.resources]
        ctx = Context.of(resources)
        for res in resources:
            for v in rule.run(res, ctx):
                if not v.waived:
                    report_violation(v.message, res.urn or None)
    return validate


def policy_for(rule: Rule):
    description = f"{rule.title} [{rule.severity}; guides {rule.source}]"
    if rule.stack:
        return StackValidationPolicy(name=rule.id, description=description, validate=stack_validator(rule),
                                     enforcement_level=enforcement(rule))
    return ResourceValidationPolicy(name=rule.id, description=description, validate=resource_validator(rule),
                                    enforcement_level=enforcement(rule))


def policies(rules: Iterable[Rule] = RULES) -> list:
    """One CrossGuard policy per rule, named by the rule id."""
    return [policy_for(r) for r in rules]

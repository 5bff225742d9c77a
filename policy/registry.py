"""The rule registry: a `Rule` (id, severity, guide source, `check(res, ctx)`), `RULES` in registration order,
and the `@rule` decorator the rule modules use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from policy.resources import Context, Resource, Violation
from policy.waivers import waiver_for

Check = Callable[[Resource, Context], Iterable[str]]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str  # what it checks, one line
    source: str  # the guide section it encodes
    applies: Callable[[Resource], bool]
    check: Check
    stack: bool = False  # needs the other resources (Context): a CrossGuard stack policy

    def run(self, res: Resource, ctx: Context) -> list[Violation]:
        if not self.applies(res):
            return []
        messages = list(self.check(res, ctx))
        waived = waiver_for(self.id, res) if messages else ""   # the service's policyWaivers, with its reason
        return [Violation(self.id, self.severity, res.type, res.name, res.urn, msg, waived=waived) for msg in messages]


RULES: list[Rule] = []


def rule(id: str, severity: str, title: str, source: str, applies: Callable[[Resource], bool], stack: bool = False):
    def register(fn: Check) -> Check:
        RULES.append(Rule(id, severity, title, source, applies, fn, stack))
        return fn
    return register

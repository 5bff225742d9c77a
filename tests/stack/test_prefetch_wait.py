"""Pulumi counts the model-cache prefetch DaemonSet Ready only with a pod (review rev-pulumi finding 3).

pulumi-kubernetes' own DaemonSet await is kstatus Current, which a DaemonSet that schedules no pod meets at once:
on a cluster where no node takes the prefetch, the InferenceServices were created on an empty cache. The stack's
`pulumi.com/waitFor` replaces that await (manifests/model_cache.py PREFETCH_WAIT_FOR). The provider cannot run
here, so the expression is checked against the rules of the provider's parser (provider/pkg/jsonpath Parse) and
evaluated with RFC 9535's semantics for the subset it uses (comparisons: a missing member is Nothing, which
equals only Nothing and is neither greater nor less than anything, RFC 9535 §2.3.5.2.2)."""

from __future__ import annotations

import re

import pytest

from manifests.model_cache import PREFETCH_WAIT_FOR, model_cache_daemonset
from offline import run_program
from stackconfig.load import load_stack

MISSING = object()  # RFC 9535 "Nothing"


def _provider_parse(expr: str) -> str:
    """pulumi-kubernetes jsonpath.Parse: a `jsonpath=` prefix, at most one '=' outside '==' (then a value), the
    path in braces; returns the RFC 9535 query it evaluates (a missing leading '$' added)."""
    assert expr.startswith("jsonpath=")
    raw = expr[len("jsonpath="):].replace("==", "\0")
    assert "=" not in raw, "a single '=' would make the rest a value to compare with"
    inner = re.search(r"\{\s*(.*?)\s*\}", raw.replace("\0", "=="))
    assert inner is not None and inner.group(0) == raw.replace("\0", "=="), "the whole path in one pair of braces"
    path = inner.group(1)
    return path if path.startswith("$") else "$" + path


_GT_NUMBER = re.compile(r"^@\.(\w+) > (\d+)$")
_AT_LEAST = re.compile(r"^\(@\.(\w+) > @\.(\w+) \|\| @\.\1 == @\.\2\)$")


def _compare(a, op: str, b) -> bool:
    if a is MISSING or b is MISSING:
        return op == "==" and a is MISSING and b is MISSING
    return a > b if op == ">" else a == b


def _selects(query: str, obj: dict) -> bool:
    """Whether `$[?A && B && …]` selects a member of `obj`, each conjunct `@.f > N` or `(@.a > @.b || @.a == @.b)`;
    any other shape fails the test (this evaluator knows only these)."""
    assert query.startswith("$[?") and query.endswith("]")
    conjuncts = query[3:-1].split(" && ")

    def holds(member, conjunct: str) -> bool:
        get = (lambda f: member.get(f, MISSING)) if isinstance(member, dict) else (lambda f: MISSING)
        if m := _GT_NUMBER.match(conjunct):
            return _compare(get(m[1]), ">", int(m[2]))
        m = _AT_LEAST.match(conjunct)
        assert m, f"unexpected filter term {conjunct!r}"
        return _compare(get(m[1]), ">", get(m[2])) or _compare(get(m[1]), "==", get(m[2]))

    return any(all(holds(member, c) for c in conjuncts) for member in obj.values())


def _ds(**status):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "model-cache-prefetch"},
            "spec": {"template": {}}, "status": status}


def _counts(desired, current, updated, available, ready):
    return dict(desiredNumberScheduled=desired, currentNumberScheduled=current, updatedNumberScheduled=updated,
                numberAvailable=available, numberReady=ready, observedGeneration=1)


READY = {
    "no node takes the prefetch (kstatus: Current)": (_counts(0, 0, 0, 0, 0), False),
    "a new DaemonSet, no status yet": ({}, False),
    "every scheduled pod ready": (_counts(2, 2, 2, 2, 2), True),
    "one pod still downloading": (_counts(2, 2, 2, 1, 1), False),
    "a rollout half done": (_counts(3, 3, 1, 3, 3), False),
    "zero counts left out of the status": ({"desiredNumberScheduled": 1, "currentNumberScheduled": 1}, False),
    "a pod more than desired while a node leaves": (_counts(1, 2, 1, 1, 1), True),
}


def test_the_program_registers_the_prefetch_with_the_wait():
    r = run_program("dev", edit=lambda c: c.update({"kserve-preflight:gate": {"enabled": False}}))
    [ds] = [d for d in r.of_type("kubernetes:apps/v1:DaemonSet")
            if d.inputs["metadata"]["name"] == "model-cache-prefetch"]
    annotations = ds.inputs["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == PREFETCH_WAIT_FOR
    assert int(annotations["pulumi.com/timeoutSeconds"]) > 600


def test_the_provider_parses_it_as_a_path_with_no_value():
    assert _provider_parse(PREFETCH_WAIT_FOR).startswith("$[?@.desiredNumberScheduled > 0 && ")


@pytest.mark.parametrize("case", list(READY))
def test_ready_only_with_a_pod_and_every_scheduled_pod_ready(case):
    status, ready = READY[case]
    assert _selects(_provider_parse(PREFETCH_WAIT_FOR), _ds(**status)) is ready


def test_the_kstatus_counts_are_all_there():
    """Each of kstatus's DaemonSet counts (cli-utils daemonsetConditions) is held to desiredNumberScheduled."""
    query = _provider_parse(PREFETCH_WAIT_FOR)
    for count in ("currentNumberScheduled", "updatedNumberScheduled", "numberAvailable", "numberReady"):
        assert f"(@.{count} > @.desiredNumberScheduled || @.{count} == @.desiredNumberScheduled)" in query
        status = _counts(2, 2, 2, 2, 2)
        status[count] = 1
        assert not _selects(query, _ds(**status))


def test_every_stack_renders_it():
    for stack in ("dev", "staging", "prod"):
        assert model_cache_daemonset(load_stack(stack))["metadata"]["annotations"]["pulumi.com/waitFor"] \
            == PREFETCH_WAIT_FOR

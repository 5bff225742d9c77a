"""The shared input helpers: Go/Knative durations, pinned images, Kubernetes toleration semantics, field readers."""

from __future__ import annotations

import pytest

from validation.errors import InputError, Problem
from validation.fields import Section
from validation.kubernetes import image_pinned, parse_duration, tolerates


@pytest.mark.parametrize("text, seconds", [
    ("90s", 90), ("5m", 300), ("1h30m", 5400), ("0s", 0), ("0", 0), ("500ms", 0.5), ("1.5m", 90),
    ("1m1h", 3660),  # Go's ParseDuration accepts units in any order
    (".5m", 30), ("5.s", 5), ("+2m", 120), ("1500000us", 1.5), ("2000\u00b5s", 0.002), ("3\u03bcs", 3e-6),
    ("250000000ns", 0.25), ("+0", 0), ("-0", 0), ("2562047h", 2562047 * 3600),  # all valid Go durations
    ("2562048h", None), ("9" * 5000 + "s", None),  # past int64 nanoseconds: Go's "invalid duration"
    ("0" * 5000 + "1." + "5" * 5000 + "s", 1.555555555),  # long but valid; truncated to whole ns as in Go
    ("-5s", None),  # valid Go, but negative: nothing the stack reads may be negative
    (".s", None), ("5", None), ("5x", None), ("1.5.5s", None), ("+", None), ("s", None), ("1mm", None),
    ("", None), ("2 minutes", None), (None, None), (60, None),
    ("\uff16" + "0s", None), ("1\u0662s", None),  # Go reads ASCII digits only (fullwidth 6, Arabic-Indic 2)
    (" 15m", None), ("15m ", None), ("1m 30s", None), ("\t90s", None), ("90s\n", None)])  # Go refuses whitespace
def test_durations_follow_go_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("image, pinned", [
    ("nvcr.io/nvidia/tritonserver:25.08-py3", True), ("registry:5000/team/img@sha256:" + "a" * 64, True),
    ("registry:5000/team/img", False), ("vllm/vllm-openai:latest", False), ("busybox", False)])
def test_image_pinned(image, pinned):
    assert image_pinned(image) is pinned


TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


@pytest.mark.parametrize("toleration, tolerated", [
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
    ({"key": "nvidia.com/gpu", "value": "true"}, True),  # operator defaults to Equal, effect to all
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),  # empty key + Exists tolerates every taint
    ({"key": "nvidia.com/gpu", "value": "false"}, False),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "dedicated", "operator": "Exists"}, False),
    ({"key": "nvidia.com/gpu", "operator": "Bogus"}, False),
])
def test_tolerations_follow_kubernetes(toleration, tolerated):
    assert tolerates(toleration, TAINT) is tolerated


def test_section_collects_every_problem_and_suggests_typos():
    problems: list[Problem] = []
    sec = Section({"minReplica": 1, "maxReplicas": "4", "cc": True, "ratio": 1.5}, "services[0]", problems)
    assert sec.int("maxReplicas", 2, min=1) == 2  # the default comes back; the problem is recorded
    assert sec.int("cc") is None
    assert sec.float("ratio", 0.5, min=0, max=1) == 0.5
    assert sec.int("minReplicas", 1) == 1
    sec.done()
    assert [str(p) for p in problems] == [
        "services[0].maxReplicas: got '4'; expected an integer >= 1",
        "services[0].cc: got True; expected an integer",
        "services[0].ratio: got 1.5; expected a number between 0 and 1",
        "services[0].minReplica: got 1; unknown key; did you mean 'minReplicas'?",
    ]
    assert str(InputError(problems, "stack 'dev'")).startswith("4 problems in stack 'dev':\n  - services[0]")


def test_integral_floats_are_integers_but_bools_are_not():
    problems: list[Problem] = []
    sec = Section({"a": 3.0, "b": False}, "", problems)
    assert sec.int("a") == 3 and isinstance(sec.int("a"), int)
    assert sec.float("b") is None and len(problems) == 1


@pytest.mark.parametrize("delay, period, failures", [(0, 10, 8), (30, 30, 60), (5, 7, 1), (0, 1, 3)])
def test_startup_budget_is_the_earliest_kill_the_kubelet_may_make(delay, period, failures):
    """The kubelet's ticks run from the pod's admission (prober/worker.go): over every phase of the ticks against
    the container's start, the earliest kill is d + p·(f − 1), the latest just under d + p·f."""
    from simulation.isvc import Probe
    from validation.kubernetes import startup_budget, startup_failures_needed

    probe = Probe(delay, period, failures)
    kills = [probe.kill_after_s(100.0, 100.0 + delay - period * (3 + k / 16)) for k in range(16)]  # admitted before
    assert min(kills) == startup_budget(delay, period, failures) and max(kills) < delay + period * failures
    for load in (startup_budget(delay, period, failures), startup_budget(delay, period, failures) + 0.5):
        needed = startup_failures_needed(delay, period, load)
        assert startup_budget(delay, period, needed) >= load > startup_budget(delay, period, needed - 1) or needed == 1


def test_schemas_are_read_once_and_every_validation_still_sees_its_own_manifest():
    """kubernetes-validate's schema files are parsed once per process (validation.kubernetes._kubernetes_validate):
    a second validation of the same kinds reads no file, and the shared parsed schemas give each manifest its own
    verdict (a bad one after a good one, the good one again after it)."""
    from kubernetes_validate import utils

    from validation.kubernetes import validation_errors

    good = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}, "spec": {"finalizers": "x"}}
    assert validation_errors(good, "1.33") == []
    loads = utils.schema_contents.cache_info().misses
    first = validation_errors(bad, "1.33")
    assert first and "finalizers" in first[0]
    assert validation_errors(good, "1.33") == [] and validation_errors(bad, "1.33") == first
    assert utils.schema_contents.cache_info().misses == loads      # no schema file read again
    assert validation_errors({**good, "kind": "Nonesuch"}, "1.33") == ["Nonesuch/a: no schema for v1 Nonesuch"]

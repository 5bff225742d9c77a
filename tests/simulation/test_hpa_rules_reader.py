"""Direct, table-driven tests of the HPA `behavior` reader, so mutation testing maps them to the code.

`rules_from_manifest` reads an autoscaling/v2 `HPAScalingRules`: ranges from kubernetes
`pkg/apis/autoscaling/validation/validation.go` (`MaxStabilizationWindowSeconds` 3600, `MaxPeriodSeconds` 1800,
`value` > 0, at least one policy). Each table row is an accepted edge or the first rejected value past it; each
rejection must name the exact key and the range.
"""

from __future__ import annotations

import pytest

from simulation.autoscaler.hpa import DEFAULT_DOWN, DEFAULT_UP, Policy, Rules, rules_from_manifest

HP = "svc.behavior.scaleDown"


def rules(data, default=DEFAULT_DOWN):
    problems: list = []
    return rules_from_manifest(data, default, HP, problems), problems


def test_hpa_rules_absent_or_empty_are_the_kubernetes_defaults():
    """apis/autoscaling/v2/defaults.go: up 0 s, Pods 4 + Percent 100 per 15 s, Max; down 300 s, Percent 100/15 s."""
    assert DEFAULT_UP == Rules(0.0, (Policy("Pods", 4, 15.0), Policy("Percent", 100, 15.0)), "Max")
    assert DEFAULT_DOWN == Rules(300.0, (Policy("Percent", 100, 15.0),), "Max")
    for default in (DEFAULT_UP, DEFAULT_DOWN):
        assert rules(None, default) == (default, [])
        assert rules({}, default) == (default, [])
    r, problems = rules({"selectPolicy": "Min"}, DEFAULT_UP)
    assert problems == [] and r == Rules(0.0, DEFAULT_UP.policies, "Min")



@pytest.mark.parametrize("field", ["stabilizationWindowSeconds", "selectPolicy", "policies"])
def test_hpa_rules_null_field_is_unset(field):
    """An explicit null is an unset optional pointer in autoscaling/v2; the API server applies the default."""
    for default in (DEFAULT_UP, DEFAULT_DOWN):
        assert rules({field: None}, default) == (default, [])

@pytest.mark.parametrize("data", [[], "Max", 5, True], ids=repr)
def test_hpa_rules_not_a_mapping(data):
    r, problems = rules(data)
    assert r == DEFAULT_DOWN
    assert [(p.path, p.value, p.allowed) for p in problems] == [(HP, data, "expected a mapping (HPAScalingRules)")]


@pytest.mark.parametrize("window", [0, 1, 3599, 3600, 60.0])
def test_stabilization_window_accepted(window):
    r, problems = rules({"stabilizationWindowSeconds": window})
    assert problems == [] and r == Rules(float(window), DEFAULT_DOWN.policies, "Max")
    assert type(r.window_s) is float


WINDOW_RANGE = "expected seconds between 0 and 3600"


@pytest.mark.parametrize("window", [-1, 3601, 3600.5, -0.001, "60", "60s", True, False, [60], float("nan"),
                                    float("inf"), 10**400], ids=lambda w: repr(w)[:20])
def test_stabilization_window_rejected(window):
    """validation.go: 0 <= stabilizationWindowSeconds <= MaxStabilizationWindowSeconds (3600); an int32."""
    r, problems = rules({"stabilizationWindowSeconds": window, "selectPolicy": "Min"})
    assert [(p.path, p.allowed) for p in problems] == [(f"{HP}.stabilizationWindowSeconds", WINDOW_RANGE)]
    assert problems[0].value is window
    assert r == Rules(300.0, DEFAULT_DOWN.policies, "Min"), "the default window, the other fields still read"


def test_stabilization_window_fractional_inside_range_is_not_an_int32():
    """`stabilizationWindowSeconds` is an int32 in autoscaling/v2: 1.5 cannot reach the API server."""
    _, problems = rules({"stabilizationWindowSeconds": 1.5})
    assert [p.path for p in problems] == [f"{HP}.stabilizationWindowSeconds"]


@pytest.mark.parametrize("select", ["Max", "Min", "Disabled"])
def test_select_policy_accepted(select):
    r, problems = rules({"selectPolicy": select, "stabilizationWindowSeconds": 7})
    assert problems == [] and r == Rules(7.0, DEFAULT_DOWN.policies, select)


@pytest.mark.parametrize("select", ["max", "", "Maximum", 1, True, ["Max"]], ids=repr)
def test_select_policy_rejected(select):
    r, problems = rules({"selectPolicy": select, "stabilizationWindowSeconds": 7}, DEFAULT_UP)
    assert [(p.path, p.value, p.allowed) for p in problems] == [
        (f"{HP}.selectPolicy", select, "expected 'Max', 'Min' or 'Disabled'")]
    assert r == Rules(7.0, DEFAULT_UP.policies, "Max")


def test_policies_flow_into_type_value_and_period_in_order():
    data = {"policies": [{"type": "Percent", "value": 7, "periodSeconds": 60},
                         {"type": "Pods", "value": 2.0, "periodSeconds": 1},
                         {"type": "Pods", "value": 1, "periodSeconds": 1800},
                         {"type": "Percent", "value": 2**31 - 1, "periodSeconds": 15}],
            "stabilizationWindowSeconds": 30, "selectPolicy": "Min"}
    r, problems = rules(data)
    assert problems == []
    assert r == Rules(30.0, (Policy("Percent", 7, 60.0), Policy("Pods", 2, 1.0), Policy("Pods", 1, 1800.0),
                             Policy("Percent", 2**31 - 1, 15.0)), "Min")
    assert type(r.policies[1].value) is int and type(r.policies[0].period_s) is float


VALUE = "expected an integer > 0 (at most 2147483647)"
SHAPE = "expected {type: Pods|Percent, value: int > 0, periodSeconds: 1..1800}"
GOOD = {"type": "Pods", "value": 3, "periodSeconds": 30}


BAD_POLICIES = [
    ({"type": "pods", "value": 1, "periodSeconds": 15}, "", SHAPE),
    ({"value": 1, "periodSeconds": 15}, "", SHAPE),
    ("Pods", "", SHAPE),
    (None, "", SHAPE),
    ({**GOOD, "value": 0}, ".value", VALUE),
    ({**GOOD, "value": -1}, ".value", VALUE),
    ({**GOOD, "value": 1.5}, ".value", VALUE),
    ({**GOOD, "value": "4"}, ".value", VALUE),
    ({**GOOD, "value": True}, ".value", VALUE),
    ({**GOOD, "value": None}, ".value", VALUE),
    ({**GOOD, "value": float("nan")}, ".value", VALUE),
    ({**GOOD, "value": 2**31}, ".value", VALUE),
    ({**GOOD, "value": 10**400}, ".value", VALUE),
    ({**GOOD, "periodSeconds": 10**400}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({"type": "Pods", "periodSeconds": 15}, ".value", VALUE),
    ({**GOOD, "periodSeconds": 0}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": 1801}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": 0.5}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": 1800.5}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": 15.5}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": -15}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": "15s"}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": True}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({**GOOD, "periodSeconds": None}, ".periodSeconds", "expected seconds between 1 and 1800"),
    ({"type": "Percent", "value": 10}, ".periodSeconds", "expected seconds between 1 and 1800"),
]


@pytest.mark.parametrize("policy,field,message", BAD_POLICIES,
                         ids=[f"{f[1:] or 'shape'}:{(p.get(f[1:], 'absent') if f else p)!r:.30}"
                              for p, f, _ in BAD_POLICIES])
def test_policy_rejected_names_the_field(policy, field, message):
    """validation.go validateScalingPolicy: type Pods|Percent, value > 0, 0 < periodSeconds <= 1800 (int32s).
    The bad policy is dropped and reported at its index; the good ones around it are kept."""
    r, problems = rules({"policies": [GOOD, policy, {**GOOD, "value": 4}]})
    bad = policy.get(field[1:]) if field else policy
    assert [(p.path, p.value, p.allowed) for p in problems] == [(f"{HP}.policies[1]{field}", bad, message)]
    assert r.policies == (Policy("Pods", 3, 30.0), Policy("Pods", 4, 30.0))


@pytest.mark.parametrize("raw", [{"type": "Pods"}, "Pods", 4], ids=repr)
def test_policies_not_a_list(raw):
    r, problems = rules({"policies": raw})
    assert [(p.path, p.value, p.allowed) for p in problems] == [
        (f"{HP}.policies", raw, "expected a list of {type, value, periodSeconds}")]
    assert r.policies == ()


def test_policies_empty_list_is_refused():
    """validation.go validateScalingRules: "must specify at least one Policy" (an empty list is not defaulted:
    the API server refuses it; with no policy the simulated HPA would never scale in that direction)."""
    r, problems = rules({"policies": []})
    assert [(p.path, p.value, p.allowed) for p in problems] == [
        (f"{HP}.policies", [], "expected at least one {type, value, periodSeconds}")]
    assert r.policies == ()

"""Node group label and taint keys and values the EKS API refuses although Kubernetes' own format allows them
(review rev-pulumi finding 4): refused at load, before any resource, with the key, the value and the limit."""

from __future__ import annotations

import pytest

from offline import run_program
from tests.program_refusal import refusal

P = "kserve-preflight"
# A valid Kubernetes qualified name (a DNS prefix, then 40 characters) of 68 characters in all.
LONG_KEY = "accelerators.inference-platform.example.com/dedicated-workload-class"
KEY_63 = "gpu.example.com/" + "k" * 47


def _node_group(**fields):
    def edit(c):
        c[f"{P}:gpuNodeGroup"].update(fields)
        c[f"{P}:gate"] = {"enabled": False}
    return edit


def _tainted(key):
    def edit(c):
        _node_group(taints=[{"key": key, "value": "true", "effect": "NoSchedule"}])(c)
        for svc in c[f"{P}:services"]:
            svc["tolerations"] = [{"key": key, "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    return edit


def test_the_keys_are_valid_kubernetes_names_longer_than_eks_allows():
    from stackconfig.formats import QUALIFIED_NAME, matches

    assert matches(QUALIFIED_NAME, LONG_KEY) and len(LONG_KEY) == 68
    assert matches(QUALIFIED_NAME, KEY_63) and len(KEY_63) == 63


def test_a_long_key_with_a_final_newline_is_reported_once_by_the_format_check():
    """Review rev-diff finding 10: the length check read the key with `QUALIFIED_NAME.match`, whose `$` also
    matches before a final "\n", so a 69-character key ending in "\n" (a quoted YAML key) got the length
    problem beside the format's; the format check alone names it (formats.py `matches`: the whole string)."""
    from stackconfig.load import project_values, stack_config_values
    from stackconfig.schema import parse_stack_config
    from validation.errors import InputError

    project, raw = stack_config_values("dev")
    values = project_values(raw, project)
    key = LONG_KEY + "\n"
    values["gpuNodeGroup"]["labels"] = {key: "x"}
    values["gpuNodeGroup"]["taints"] = [{"key": key, "value": "x"}]
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, "dev")
    paths = [p.path for p in err.value.problems]
    assert paths.count(f"{P}:gpuNodeGroup.labels.{key}") == 1 and paths.count(f"{P}:gpuNodeGroup.taints[0].key") == 1
    assert not [p for p in err.value.problems if "characters in all" in p.allowed]


def test_a_taint_key_over_63_characters_is_refused(registered):
    message = refusal("dev", _tainted(LONG_KEY), registered)
    assert f"gpuNodeGroup.taints[0].key: got '{LONG_KEY}'; expected a taint key of at most 63 characters in all, " \
           "prefix included (it has 68): the EKS API refuses" in message


def test_a_label_key_over_63_characters_is_refused(registered):
    message = refusal("dev", _node_group(labels={LONG_KEY: "a100"}), registered)
    assert f"gpuNodeGroup.labels.{LONG_KEY}: got '{LONG_KEY}'; expected a label key of at most 63 characters" \
           in message


def test_an_empty_label_value_is_refused(registered):
    message = refusal("dev", _node_group(labels={"example.com/pool": ""}), registered)
    assert "gpuNodeGroup.labels.example.com/pool: got ''; expected a non-empty label value" in message
    assert "the EKS API refuses an empty node group label value" in message


@pytest.mark.parametrize("edit", [_tainted(KEY_63), _node_group(labels={KEY_63: "x"})], ids=["taint", "label"])
def test_63_characters_and_a_one_character_value_pass(edit, registered):
    """Control: the longest key EKS takes, with a one-character label value."""
    [ng] = run_program("dev", edit=edit).of_type("aws:eks/nodeGroup:NodeGroup")
    assert KEY_63 in ng.inputs["labels"] or KEY_63 in [t["key"] for t in ng.inputs["taints"]]
    assert "gpu-ng" in registered

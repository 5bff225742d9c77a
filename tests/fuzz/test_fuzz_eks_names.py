"""Properties of the names EKS and KServe check only after `pulumi up` started (stackconfig/formats.py): for any
valid node label key, the config is refused exactly when EKS would refuse it; for any Standard-mode service name
and namespace, exactly when KServe's predictor host would not be a DNS name."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

PROJECT, RAW = stack_config_values("staging")
VALUES = project_values(RAW, PROJECT)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # apimachinery IsDNS1123Label

_part = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
_prefix = st.lists(st.one_of(_part, st.sampled_from(["kubernetes", "k8s", "io", "eks", "amazonaws", "com", "node",
                                                     "node-role", "example"])), min_size=1, max_size=4)
label_keys = st.builds(lambda parts, name: ".".join(parts) + "/" + name, _prefix, _part)


def _problems(values) -> list[str]:
    try:
        parse_stack_config(values, PROJECT, "staging")
    except InputError as err:
        return [p.path for p in err.problems]
    return []


@given(label_keys)
@settings(max_examples=60, deadline=None)
def test_a_label_key_is_refused_exactly_when_eks_reserves_it(key):
    values = {**VALUES, "gpuNodeGroup": {**VALUES["gpuNodeGroup"], "labels": {key: "true"}}}
    reserved = any(part in key for part in ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/"))
    assert (f"{PROJECT}:gpuNodeGroup.labels.{key}" in _problems(values)) == reserved


names = st.from_regex(r"\A[a-z]([-a-z0-9]{0,40}[a-z0-9])?\Z")
namespaces = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")


@given(names, namespaces)
@settings(max_examples=60, deadline=None)
def test_a_standard_mode_name_is_refused_exactly_when_its_predictor_host_is_not_a_dns_name(name, namespace):
    services = [dict(s) for s in VALUES["services"]]
    services[1]["name"] = name  # vision: Standard mode
    values = {**VALUES, "services": services, "cluster": {**VALUES["cluster"], "namespace": namespace},
              "modelCache": {**VALUES["modelCache"], "namespace": namespace}}
    if name == services[0]["name"]:
        return  # a duplicate name is another rule
    label = f"{name}-predictor-{namespace}"
    assert (f"{PROJECT}:services[1].name" in _problems(values)) == (not DNS_LABEL.match(label))

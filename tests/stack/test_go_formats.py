"""Formats are checked as Go reads them (stackconfig/formats.py `go_pattern`, `matches`): apimachinery, EKS and IAM
use Go's regexp, whose `$` is the end of the text and whose `\\d`/`\\w` are ASCII, and resource.ParseQuantity takes
ASCII digits only. Python's `$` also matches before a final "\\n" and its `\\d` any Unicode digit, so "chat\\n",
"٣" and "２４Gi" passed every check and were refused during `pulumi up`, after the node group existed
(review rev-fuzz finding 1)."""

from __future__ import annotations

import copy

import pytest

from stackconfig import formats
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from tests.program_refusal import refusal
from validation.errors import InputError

P = "kserve-preflight"
STACKS = ("dev", "staging", "prod")
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
EDITS = {"newline": lambda s: s + "\n", "full-width digits": lambda s: s.translate(FULL_WIDTH),
         "Arabic-Indic digits": lambda s: s.translate(ARABIC_INDIC)}


def _values(stack: str) -> dict:
    project, raw = stack_config_values(stack)
    return project_values(raw, project)


def _leaves(node, path=()):
    """The path of every string value (not a mapping's key) in a stack's config."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, path + (i,))
    elif isinstance(node, str):
        yield path


def _get(node, path):
    for part in path:
        node = node[part]
    return node


def _cases():
    for stack in STACKS:
        values = _values(stack)
        for path in _leaves(values):
            for edit, change in EDITS.items():
                if change(_get(values, path)) != _get(values, path):
                    yield pytest.param(stack, path, edit, id=f"{stack}-{'.'.join(map(str, path))}-{edit}")


CASES = list(_cases())


def test_the_cases_reach_every_kind_of_leaf():
    """The parametrisation is not empty and holds the leaves the review found accepted."""
    ids = {c.id for c in CASES}
    assert len(CASES) > 150
    for leaf in ("dev-services.0.name-newline", "dev-services.0.resources.cpu-Arabic-Indic digits",
                 "dev-services.0.resources.memory-full-width digits", "prod-cluster.nodeRoleArn-full-width digits",
                 "staging-services.1.runtime.image-full-width digits", "staging-modelCache.serviceAccountName-newline",
                 "prod-devicePlugin.image-newline", "staging-cluster.subnetIds.2-newline"):
        assert leaf in ids


@pytest.mark.parametrize("stack,path,edit", CASES)
def test_a_string_with_a_final_newline_or_non_ascii_digits_is_refused_at_load(stack, path, edit):
    values = _values(stack)
    parent = _get(values, path[:-1])
    parent[path[-1]] = EDITS[edit](parent[path[-1]])
    with pytest.raises(InputError) as err:
        parse_stack_config(values, P, stack)
    assert repr(parent[path[-1]]) in str(err.value)  # refused for the edited value (or its mapping), not another


@pytest.mark.parametrize("name,good", [
    ("SERVICE_NAME", "chat2"), ("DNS_LABEL", "kserve-inference1"), ("DNS_SUBDOMAIN", "hf-token.v2"),
    ("QUANTITY", "24Gi"), ("SUBNET_ID", "subnet-0a1b2c3d4e5f60001"),
    ("ROLE_ARN", "arn:aws:iam::123456789012:role/inference-gpu-node"),
    ("IMAGE_REFERENCE", "nvcr.io/nvidia/tritonserver:25.08-py3"), ("EC2_INSTANCE_TYPE", "p4d.24xlarge"),
    ("hf", "hf://meta-llama/Meta-Llama-3-8B-Instruct"), ("https", "https://models.example.com:8443/m"),
])
def test_each_pattern_takes_the_whole_string_and_ascii_digits_only(name, good):
    pattern, matches = getattr(formats, name, None) or formats.STORAGE_URI[name], formats.matches
    assert matches(pattern, good) and good.translate(FULL_WIDTH) != good
    assert not matches(pattern, good + "\n")
    assert not matches(pattern, good.translate(FULL_WIDTH))
    assert not matches(pattern, good.translate(ARABIC_INDIC))


def test_an_object_path_may_hold_unicode_but_no_whitespace():
    """An S3 or GCS object key is any UTF-8 (kept), but no whitespace of any kind in the URI."""
    STORAGE_URI, matches = formats.STORAGE_URI, formats.matches
    assert matches(STORAGE_URI["s3"], "s3://models/vit-large-١٦/")
    assert not matches(STORAGE_URI["s3"], "s3://models/vit\u00a0large/")
    assert not matches(STORAGE_URI["s3"], "s3://models/vit-large/\n")


def test_a_cluster_name_with_a_final_newline_is_reported_on_its_own_key():
    """It was blamed on gpuNodeGroup.name: the cluster name's own check let the "\\n" through, the node group
    name prefix check did not."""
    values = _values("dev")
    values["cluster"]["name"] += "\n"
    with pytest.raises(InputError) as err:
        parse_stack_config(values, P, "dev")
    assert [p.path for p in err.value.problems] == [f"{P}:cluster.name"]


def _catalog_instance(name: str):
    def edit(values):
        values["catalog"] = {"instanceTypes": {name: {"gpu": "L40S", "gpus": 1, "vcpus": 4, "memoryGib": 32}}}
        values["gpuNodeGroup"]["instanceTypes"] = [name]
    return edit


@pytest.mark.parametrize("name", ["my-gpu-box", "G6E.XLARGE", "g6e.xlarge\n", "g６e.xlarge", "g6e. xlarge"])
def test_a_catalog_instance_type_that_is_no_ec2_type_name_is_refused(name):
    values = _values("dev")
    _catalog_instance(name)(values)
    with pytest.raises(InputError) as err:
        parse_stack_config(values, P, "dev")
    message = str(err.value)
    assert f"{P}:catalog.instanceTypes.{name}: got {name!r}; expected an EC2 instance type name" in message


def test_a_catalog_instance_type_with_an_ec2_name_is_accepted():
    for name in ("g7e.2xlarge", "u-6tb1.metal", "p5en.48xlarge"):
        values = _values("dev")
        _catalog_instance(name)(values)
        parse_stack_config(values, P, "dev")


def test_the_program_refuses_a_newline_name_before_registering_anything(registered):
    def edit(config):
        config[f"{P}:services"][0]["name"] = "chat\n"
        config[f"{P}:cluster"]["namespace"] = "kserve-inference\n"
    message = refusal("dev", edit, registered)
    assert "services[0].name: got 'chat\\n'" in message and "cluster.namespace: got 'kserve-inference\\n'" in message


def test_a_keda_prometheus_address_with_a_final_newline_is_refused():
    from stackconfig.autoscaling import _URL
    matches = formats.matches
    assert matches(_URL, "http://prometheus-operated.monitoring.svc:9090")
    assert not matches(_URL, "http://prometheus-operated.monitoring.svc:9090\n")
    assert not matches(_URL, "http://prometheus-operated.monitoring.svc:９０９０")


def test_the_webhook_mirrors_read_go_integers_and_names_whole():
    """validation/admission.py mirrors strconv.ParseInt and KServe's IsvcNameFmt: "5\\n" is no Go integer."""
    from validation.admission import ISVC_NAME, _go_int32
    assert _go_int32("5") == 5 and _go_int32("5\n") is None and _go_int32("٥") is None
    assert ISVC_NAME.fullmatch("chat") and not ISVC_NAME.fullmatch("chat\n")


def test_a_kserve_version_with_non_ascii_digits_is_refused():
    values = copy.deepcopy(_values("dev"))
    values["kserve"] = {**values.get("kserve", {}), "version": "0.1٦"}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, P, "dev")
    assert "kserve.version: got '0.1٦'" in str(err.value)


def test_the_node_fit_quantity_reads_ascii_digits_only():
    from catalog.allocatable import quantity
    assert quantity("24Gi") == 24 * 2**30
    for bad in ("２４Gi", "24Gi\nx"):
        with pytest.raises(ValueError):
            quantity(bad)

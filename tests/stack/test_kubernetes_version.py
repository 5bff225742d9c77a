"""cluster.kubernetesVersion: no older than Knative 1.2x starts on, with schemas to validate against, 1.36 by default.

knative/pkg `version/version.go` (CheckMinimumVersion) makes Knative's controllers and webhooks refuse an API server
below v1.32.0 (release-1.19, -1.20), v1.33.0 (release-1.21), v1.34.0 (release-1.22, -1.23).
"""

from __future__ import annotations

import kubernetes_validate.utils
import pulumi
import pytest

from offline import run_program
from stackconfig.cluster import DEFAULT_KUBERNETES_VERSION, KUBERNETES_VERSIONS
from stackconfig.load import load_stack
from stackconfig.schema import parse_stack_config

P = "kserve-preflight"
MINIMAL = {
    "cluster": {"name": "c", "subnetIds": ["subnet-0a1b2c3d"], "createNodeRole": True},
    "services": [{"name": "chat", "maxReplicas": 2,
                  "model": {"name": "llama-3-8b", "storageUri": "hf://m/l", "public": True}}],
}


def _with_version(version, knative=None):
    out = dict(MINIMAL, cluster=dict(MINIMAL["cluster"], kubernetesVersion=version))
    return out if knative is None else dict(out, knative={"version": knative})


@pytest.mark.parametrize("version", ["1.31", "1.28"])
def test_a_version_knative_refuses_stops_the_program_before_any_resource(version, registered):
    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=lambda c: c[f"{P}:cluster"].update(kubernetesVersion=version))
    message = str(err.value)
    assert f"cluster.kubernetesVersion: got '{version}'" in message, message
    assert "expected one of '1.32', '1.33', '1.34', '1.35', '1.36', '1.37'" in message, message
    assert "knative/pkg version/version.go" in message and "1.34 for 1.22 and 1.23" in message, message
    assert registered == []


@pytest.mark.parametrize("version,knative", [("1.32", "1.20"), ("1.37", None)])
def test_the_oldest_and_newest_supported_versions_are_accepted(version, knative):
    """1.32 with the Knative release that starts there (the default, 1.23, needs 1.34: test_knative_version.py)."""
    assert parse_stack_config(_with_version(version, knative), P, "dev").cluster.kubernetes_version == version


def test_a_version_without_schemas_is_refused_naming_the_allowed_ones():
    from validation.errors import InputError

    with pytest.raises(InputError, match=r"cluster.kubernetesVersion: got '1.38'; expected one of '1.32'.*'1.37'"):
        parse_stack_config(_with_version("1.38"), P, "dev")


def test_default_and_shipped_stacks_are_1_36():
    """1.31, the old default, is below every Knative 1.2x minimum, and EKS ended its extended support in Nov 2026."""
    assert parse_stack_config(MINIMAL, P, "dev").cluster.kubernetes_version == DEFAULT_KUBERNETES_VERSION == "1.36"
    for stack in ("dev", "staging", "prod"):
        assert load_stack(stack).cluster.kubernetes_version == "1.36"


def test_every_accepted_version_has_kubernetes_validate_schemas():
    shipped = {v.rsplit(".", 1)[0] for v in kubernetes_validate.utils.all_versions()}
    assert set(KUBERNETES_VERSIONS) <= shipped

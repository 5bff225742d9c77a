"""`modelCache.imagePullSecrets`: the prefetch image is pulled on every Linux node, from Docker Hub by default, whose
anonymous pull limit a cluster's nodes share (review rev-pulumi finding 7). Named Secrets (a mirror's or Docker
Hub's credentials) go into the prefetch pod spec; a name the API server would refuse is refused at load."""

from __future__ import annotations

import pytest

from offline import run_program
from tests.program_refusal import refusal
from validation.kubernetes import normalise, validation_errors

P = "kserve-preflight"


def _secrets(value):
    def edit(c):
        c[f"{P}:modelCache"]["imagePullSecrets"] = value
        c[f"{P}:gate"] = {"enabled": False}
    return edit


def _prefetch(r):
    [ds] = [d for d in r.of_type("kubernetes:apps/v1:DaemonSet")
            if d.inputs["metadata"]["name"] == "model-cache-prefetch"]
    return ds


def test_the_named_secrets_reach_the_prefetch_pod_spec():
    r = run_program("dev", edit=_secrets(["ecr-pull-through", "dockerhub.credentials"]))
    ds = _prefetch(r)
    pod = ds.inputs["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "ecr-pull-through"}, {"name": "dockerhub.credentials"}]
    assert validation_errors(normalise(ds.inputs | {"apiVersion": "apps/v1", "kind": "DaemonSet"}), "1.36") == []


def test_none_by_default():
    r = run_program("dev", edit=lambda c: c.update({f"{P}:gate": {"enabled": False}}))
    assert "imagePullSecrets" not in _prefetch(r).inputs["spec"]["template"]["spec"]


@pytest.mark.parametrize("name", ["Docker_Hub", "-mirror", "a" * 254])
def test_a_name_the_api_server_refuses_is_refused_at_load(name, registered):
    message = refusal("dev", _secrets(["ok-secret", name]), registered)
    assert f"modelCache.imagePullSecrets[1]: got {name[:10]!r}"[:-1] in message  # a long value is shortened
    assert "; expected a Kubernetes Secret name: lowercase letters, digits and '-'" in message
    assert "imagePullSecrets[0]" not in message


@pytest.mark.parametrize("value", ["dockerhub", [""], [{"name": "dockerhub"}]])
def test_not_a_list_of_names_is_refused(value, registered):
    message = refusal("dev", _secrets(value), registered)
    assert "modelCache.imagePullSecrets: got" in message and "expected a list of non-empty strings" in message

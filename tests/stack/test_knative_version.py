"""knative.version: the cluster's Knative Serving release (1.20-1.23, default 1.23) and the three things it switches.

- the Kubernetes floor: knative/pkg version/version.go at the commit each release's go.mod pins (v1.32.0 for
  knative-v1.20.0, v1.33.0 for 1.21.0, v1.34.0 for 1.22.0 and 1.23.0);
- `kubernetes.podspec-volumes-ephemeral`: a config-features key only from knative-v1.23.0 (features.go, #16590);
  before it VolumeSourceMask has no Ephemeral, so an ephemeral volume is never admitted;
- `secure-pod-defaults`: read by asSecurePodDefaultsFlag from knative-v1.20.0 (Disabled, AllowRootBounded, Enabled,
  strings.EqualFold; `Allowed` no longer parsed), and AllowRootBounded admits what Enabled admits in
  PodSecurityContextMask (a RuntimeDefault or Unconfined seccompProfile) and CapabilitiesMask (NET_BIND_SERVICE).
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pulumi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offline import run_program
from stackconfig.cluster import KNATIVE_KUBERNETES_FLOOR, KUBERNETES_VERSIONS
from stackconfig.load import load_stack, stack_names
from stackconfig.schema import parse_stack_config
from validation.knative_podspec import knative_pod_refusals
from validation.cluster_admission import (DEFAULT_KNATIVE, KNATIVE_FEATURE_DEFAULTS, KNATIVE_VERSIONS,
                                          ClusterAdmission, knative_feature_keys)
from validation.errors import InputError

from fuzz.mutate import mutated
from tests.runtime_stack import chat_stack

P = "p"
EPHEMERAL = "kubernetes.podspec-volumes-ephemeral"
SPD = "secure-pod-defaults"


def _cfg(knative: dict | None = None, kubernetes: str | None = None) -> dict:
    cfg = chat_stack()
    if knative is not None:
        cfg["knative"] = copy.deepcopy(knative)
    if kubernetes is not None:
        cfg["cluster"]["kubernetesVersion"] = kubernetes
    return cfg


def _problems(cfg: dict) -> list:
    with pytest.raises(InputError) as err:
        parse_stack_config(cfg, P, "dev")
    return err.value.problems


# -- the key itself -----------------------------------------------------------------------------------------------

def test_the_default_is_1_23_and_the_supported_releases_are_1_20_to_1_23():
    assert parse_stack_config(_cfg(), P, "dev").knative.version == DEFAULT_KNATIVE == (1, 23)
    assert KNATIVE_VERSIONS == ((1, 20), (1, 21), (1, 22), (1, 23))
    assert set(KNATIVE_KUBERNETES_FLOOR) == set(KNATIVE_VERSIONS)


@pytest.mark.parametrize("given,parsed", [("1.20", (1, 20)), ("v1.21", (1, 21)), ("1.22.3", (1, 22)),
                                          ("v1.23.0", (1, 23))])
def test_a_quoted_release_with_optional_v_and_patch_is_read_as_major_minor(given, parsed):
    assert parse_stack_config(_cfg({"version": given}), P, "dev").knative.version == parsed


@pytest.mark.parametrize("given", [1.2, 1.23, "1.19", "1.24", "2.0", "1.2", "latest", "1", 120, True, ["1.23"]])
def test_other_values_are_refused_naming_key_value_and_the_allowed_releases(given):
    [problem] = _problems(_cfg({"version": given}, kubernetes="1.36"))
    assert problem.path == f"{P}:knative.version" and problem.value == given
    assert '"1.20", "1.21", "1.22", "1.23"' in problem.allowed and "quoted" in problem.allowed


# -- 1. the Kubernetes floor ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("knative,kubernetes,floor", [
    ("1.21", "1.32", 33), ("1.22", "1.33", 34), ("1.23", "1.33", 34), (None, "1.33", 34), (None, "1.32", 34)])
def test_a_kubernetes_version_below_the_releases_floor_is_refused_naming_both_keys(knative, kubernetes, floor):
    [problem] = _problems(_cfg(None if knative is None else {"version": knative}, kubernetes))
    assert problem.path == f"{P}:cluster.kubernetesVersion" and problem.value == kubernetes
    assert f"expected at least 1.{floor} with knative.version \"{knative or '1.23'}\"" in problem.allowed
    assert "knative/pkg version/version.go" in problem.allowed
    assert "Set knative.version to the release" in problem.allowed


@pytest.mark.parametrize("knative,kubernetes", [("1.20", "1.32"), ("1.21", "1.33"), ("1.22", "1.34"),
                                                ("1.23", "1.34"), ("1.20", "1.37")])
def test_a_kubernetes_version_at_or_above_the_floor_is_accepted(knative, kubernetes):
    cfg = parse_stack_config(_cfg({"version": knative}, kubernetes), P, "dev")
    assert cfg.cluster.kubernetes_version == kubernetes


def test_a_stack_of_standard_mode_services_is_not_held_to_knatives_floor():
    """Review 12 (diff), F4: a stack whose every service is Standard (RawDeployment) runs no Knative, so Knative's
    minimum Kubernetes is not its; one Knative service brings it back."""
    cfg = _cfg(None, "1.33")
    cfg["services"][0].update(deploymentMode="Standard", minReplicas=1)
    assert parse_stack_config(cfg, P, "dev").cluster.kubernetes_version == "1.33"
    cfg["services"].append({**copy.deepcopy(cfg["services"][0]), "name": "knative-chat",
                            "deploymentMode": "Knative"})
    assert [p.path for p in _problems(cfg)] == [f"{P}:cluster.kubernetesVersion"]


def test_the_floor_names_the_releases_that_start_on_the_clusters_version():
    [problem] = _problems(_cfg(None, "1.33"))
    assert '"1.20" or "1.21" start on 1.33' in problem.allowed
    [problem] = _problems(_cfg({"version": "1.21"}, "1.32"))
    assert '"1.20" starts on 1.32' in problem.allowed


@pytest.mark.parametrize("knative,kubernetes", [({"version": "1.19"}, "1.33"), ({"version": "1.23"}, "1.31"),
                                                ("1.23", "1.33")])
def test_a_refused_key_is_not_blamed_twice_through_its_default(knative, kubernetes):
    """A refused knative.version (or knative section) stands in as 1.23, a refused kubernetesVersion as 1.36: the
    floor check is skipped rather than report a floor neither key set."""
    problems = _problems(_cfg(knative, kubernetes))
    assert len(problems) == 1, problems


def test_every_knative_release_starts_on_some_accepted_kubernetes_version():
    assert all(f"1.{floor}" in KUBERNETES_VERSIONS for floor in KNATIVE_KUBERNETES_FLOOR.values())


@pytest.mark.parametrize("stack", stack_names())
def test_shipped_stacks_load_on_the_default_release(stack):
    cfg = load_stack(stack)
    assert cfg.knative.version == DEFAULT_KNATIVE
    assert int(cfg.cluster.kubernetes_version.split(".")[1]) >= KNATIVE_KUBERNETES_FLOOR[DEFAULT_KNATIVE]


def test_the_floor_stops_the_program_before_any_resource(registered):
    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=lambda c: c["kserve-preflight:cluster"].update(kubernetesVersion="1.33"))
    assert "cluster.kubernetesVersion: got '1.33'; expected at least 1.34 with knative.version" in str(err.value)
    assert registered == []
    run_program("dev", edit=lambda c: (c["kserve-preflight:cluster"].update(kubernetesVersion="1.33"),
                                       c.__setitem__("kserve-preflight:knative", {"version": "1.21"}),
                                       c.__setitem__("kserve-preflight:gate", {"enabled": False})))
    assert "gpu-ng" in registered  # control: on the release that starts there, the program runs


# -- 2. kubernetes.podspec-volumes-ephemeral ------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.20", "1.21", "1.22"])
def test_the_ephemeral_key_is_refused_before_1_23(version):
    [problem] = _problems(_cfg({"version": version, "features": {EPHEMERAL: "enabled"}}))
    assert problem.path == f"{P}:knative.features.{EPHEMERAL}" and problem.value == "enabled"
    assert f"Knative Serving {version} (knative.version)" in problem.allowed and "comes with Knative 1.23" in \
        problem.allowed


def test_the_ephemeral_key_is_accepted_from_1_23():
    for knative in ({"version": "1.23"}, {}):
        cfg = parse_stack_config(_cfg({**knative, "features": {EPHEMERAL: "enabled"}}), P, "dev")
        assert cfg.knative.features == {EPHEMERAL: "enabled"}


def test_the_release_keys_differ_only_by_the_ephemeral_key():
    for version in KNATIVE_VERSIONS:
        keys = knative_feature_keys(version)
        assert (EPHEMERAL in keys) == (version >= (1, 23))
        assert set(KNATIVE_FEATURE_DEFAULTS) - set(keys) <= {EPHEMERAL}


EPHEMERAL_POD = {"model": {"modelFormat": {"name": "huggingface"}},
                 "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}


@pytest.mark.parametrize("version", [(1, 20), (1, 21), (1, 22)])
def test_an_ephemeral_volume_is_never_admitted_before_1_23_and_the_advice_is_not_to_enable_a_flag(version):
    cluster = ClusterAdmission(knative_version=version).with_features([EPHEMERAL])
    assert cluster.knative_version == version  # with_features keeps the release
    [refusal] = knative_pod_refusals("x", EPHEMERAL_POD, cluster)
    assert refusal.path == "spec.predictor.volumes[0].ephemeral" and refusal.rule == "fieldmask.go VolumeSourceMask"
    assert "never admits" in refusal.message and "enable" not in refusal.message
    assert f"Knative Serving {version[0]}.{version[1]}" in refusal.message and "1.23" in refusal.message


def test_an_ephemeral_volume_follows_the_flag_on_1_23():
    assert list(knative_pod_refusals("x", EPHEMERAL_POD, ClusterAdmission().with_features([EPHEMERAL]))) == []
    [refusal] = knative_pod_refusals("x", EPHEMERAL_POD, ClusterAdmission(knative_version=(1, 23)))
    assert refusal.rule == "k8s_validation.go validateVolume" and "enable it there" in refusal.message


# -- 3. secure-pod-defaults ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("given,stored", [("AllowRootBounded", "AllowRootBounded"),
                                          ("allowrootbounded", "AllowRootBounded"),
                                          ("ALLOWROOTBOUNDED", "AllowRootBounded"), ("Enabled", "enabled"),
                                          ("enabled", "enabled"), ("DISABLED", "disabled")])
def test_secure_pod_defaults_takes_what_knative_parses_in_any_case(given, stored):
    for version in ("1.20", "1.23"):
        cfg = parse_stack_config(_cfg({"version": version, "features": {SPD: given}}), P, "dev")
        assert cfg.knative.features == {SPD: stored}


@pytest.mark.parametrize("given", ["allowed", "Allowed", "bounded", "AllowRoot", ""])
def test_secure_pod_defaults_refuses_what_knative_ignores(given):
    [problem] = _problems(_cfg({"features": {SPD: given}}))
    assert problem.path == f"{P}:knative.features.{SPD}" and problem.value == given
    assert "enabled, disabled, AllowRootBounded" in problem.allowed and "`allowed` neither" in problem.allowed


def test_the_other_flags_keep_their_values():
    cfg = parse_stack_config(_cfg({"features": {"kubernetes.podspec-affinity": "allowed"}}), P, "dev")
    assert cfg.knative.features == {"kubernetes.podspec-affinity": "allowed"}
    [problem] = _problems(_cfg({"features": {"kubernetes.podspec-affinity": "AllowRootBounded"}}))
    assert problem.allowed == "expected one of enabled, disabled, allowed"


def _pod(security_context: dict | None = None, add: list | None = None) -> dict:
    pred: dict = {"model": {"modelFormat": {"name": "huggingface"}}}
    if security_context is not None:
        pred["securityContext"] = security_context
    if add is not None:
        pred["model"]["securityContext"] = {"capabilities": {"add": add, "drop": ["ALL"]}}
    return pred


def _refusals(pred: dict, secure_pod_defaults: str | None) -> list:
    features = dict(KNATIVE_FEATURE_DEFAULTS)
    if secure_pod_defaults is not None:
        features[SPD] = secure_pod_defaults
    return list(knative_pod_refusals("x", pred, ClusterAdmission(features)))


@pytest.mark.parametrize("value", ["AllowRootBounded", "allowrootbounded", "enabled"])
@pytest.mark.parametrize("seccomp", ["RuntimeDefault", "Unconfined"])
def test_allow_root_bounded_admits_a_seccomp_only_pod_security_context_like_enabled(value, seccomp):
    assert _refusals(_pod({"seccompProfile": {"type": seccomp}}), value) == []


@pytest.mark.parametrize("value", [None, "disabled", "allowed"])
def test_without_secure_defaults_a_pod_security_context_is_refused(value):
    [refusal] = _refusals(_pod({"seccompProfile": {"type": "RuntimeDefault"}}), value)
    assert refusal.path == "spec.predictor.securityContext" and "PodSecurityContextMask" in refusal.rule


@pytest.mark.parametrize("value", ["AllowRootBounded", "enabled"])
def test_secure_defaults_keep_only_runtime_default_or_unconfined_seccomp(value):
    """PodSecurityContextMask copies the profile only for those two types: a Localhost one is dropped, so refused."""
    pod = _pod({"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}})
    [refusal] = _refusals(pod, value)
    assert refusal.path == "spec.predictor.securityContext"
    [refusal] = _refusals(_pod({"seccompProfile": {"type": "RuntimeDefault"}, "runAsUser": 1000}), value)
    assert refusal.path == "spec.predictor.securityContext"


@pytest.mark.parametrize("value", ["AllowRootBounded", "enabled"])
def test_allow_root_bounded_admits_net_bind_service_alone_like_enabled(value):
    assert _refusals(_pod(add=["NET_BIND_SERVICE"]), value) == []
    [refusal] = _refusals(_pod(add=["NET_BIND_SERVICE", "SYS_ADMIN"]), value)
    assert refusal.path == "spec.predictor.model.securityContext.capabilities.add"
    [refusal] = _refusals(_pod(add=["NET_BIND_SERVICE"]), "disabled")
    assert "CapabilitiesMask" in refusal.rule


# -- fuzz: the knative block with its release, against the cluster's version -------------------------------------

BLOCK = {"version": "1.21", "features": {SPD: "AllowRootBounded", "kubernetes.podspec-tolerations": "enabled"},
         "manageFeatures": False}


@given(mutated({"knative": BLOCK, "kubernetesVersion": "1.33"}))
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
def test_mutated_knative_releases_are_refused_cleanly_or_hold_to_their_rules(case):
    data, mutations = case
    cfg = _cfg()
    if isinstance(data, dict):
        if "knative" in data:
            cfg["knative"] = data["knative"]
        if "kubernetesVersion" in data:
            cfg["cluster"]["kubernetesVersion"] = data["kubernetesVersion"]
    try:
        parsed = parse_stack_config(cfg, P, "dev")
    except InputError as err:
        assert err.problems and all(p.allowed for p in err.problems), mutations
        assert all(p.path.startswith((f"{P}:knative", f"{P}:cluster.kubernetesVersion")) for p in err.problems), \
            (mutations, err.problems)
        return
    version, kubernetes = parsed.knative.version, parsed.cluster.kubernetes_version
    assert version in KNATIVE_VERSIONS, mutations
    assert int(kubernetes.split(".")[1]) >= KNATIVE_KUBERNETES_FLOOR[version], mutations
    assert set(parsed.knative.features) <= set(knative_feature_keys(version)), mutations
    assert parsed.knative.features.get(SPD, "disabled") in ("enabled", "disabled", "AllowRootBounded"), mutations


# The upstream facts, restated: the release → the oldest Kubernetes minor its controllers start on.
UPSTREAM_FLOOR = {"1.20": 32, "1.21": 33, "1.22": 34, "1.23": 34}


@given(knative=st.sampled_from([None, "1.19", "1.20", "v1.21.0", "1.22", "1.23", "1.24"]),
       kubernetes=st.sampled_from(["1.31", *KUBERNETES_VERSIONS]),
       secure=st.sampled_from([None, "enabled", "Enabled", "AllowRootBounded", "allowrootbounded", "allowed", "x"]),
       ephemeral=st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
def test_a_release_is_accepted_exactly_where_knative_would_start_and_parse_it(knative, kubernetes, secure, ephemeral):
    block: dict = {"features": {}}
    if knative is not None:
        block["version"] = knative
    if secure is not None:
        block["features"][SPD] = secure
    if ephemeral:
        block["features"][EPHEMERAL] = "enabled"
    release = (knative or "1.23").lstrip("v")[:4]
    minor = int(kubernetes.split(".")[1])
    expected = (release in UPSTREAM_FLOOR and minor >= UPSTREAM_FLOOR[release]
                and secure in (None, "enabled", "Enabled", "AllowRootBounded", "allowrootbounded")
                and (not ephemeral or release == "1.23"))
    try:
        cfg = parse_stack_config(_cfg(block, kubernetes), P, "dev")
    except InputError as err:
        assert not expected, err
        return
    assert expected
    assert cfg.knative.version == tuple(int(x) for x in release.split("."))


def test_the_stacks_admission_check_runs_as_its_knative_release():
    """manifests/admission.py `cluster_admission`: the release the stack names, not the default."""
    from manifests.admission import cluster_admission
    from stackconfig.load import load_stack

    cfg = load_stack("dev")
    assert cluster_admission(cfg).knative_version == cfg.knative.version
    older = replace(cfg, knative=replace(cfg.knative, version=(1, 20)))
    assert cluster_admission(older).knative_version == (1, 20)
    assert not cluster_admission(older).knows("kubernetes.podspec-volumes-ephemeral")

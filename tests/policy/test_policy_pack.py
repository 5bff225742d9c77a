"""The CrossGuard pack: one policy per rule, enforcement from severity, and the same findings as pytest.

Per ../shared/reference/pulumi-offline-testing.md §3 the pack is never constructed here (PolicyPack's constructor
starts a gRPC server and blocks); each policy's `validate(args, report_violation)` is called directly with hand-built
ResourceValidationArgs / StackValidationArgs, props wrapped in the SDK's own unknown-checking proxy as the
analyzer does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from pulumi_policy import (EnforcementLevel, PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions,
                           ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs,
                           StackValidationPolicy)
from pulumi_policy.proxy import unknown_checking_proxy

from policy.pack import policies
from policy.rules import MANDATORY, RULES, RULES_BY_ID, Resource, evaluate
from policy_fixtures import bad_stack, shipped

POLICY_DIR = Path(__file__).resolve().parents[2] / "policy"
POLICIES = {p.name: p for p in policies()}


def _opts(res: Resource) -> PolicyResourceOptions:
    return PolicyResourceOptions(protect=res.protect, ignore_changes=list(res.ignore_changes),
                                 delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def _collect():
    found: list[tuple[str, str | None]] = []
    return found, lambda message, urn=None: found.append((message, urn))


def run_policy(policy, resources: list[Resource]) -> list[tuple[str, str | None]]:
    found, report = _collect()
    if isinstance(policy, StackValidationPolicy):
        args = StackValidationArgs([PolicyResource(r.type, unknown_checking_proxy(r.props), r.urn, r.name, _opts(r),
                                                   None, None, [], {}) for r in resources])
        policy.validate(args, report)
    else:
        for r in resources:
            policy.validate(ResourceValidationArgs(r.type, unknown_checking_proxy(r.props), r.urn, r.name, _opts(r),
                                                   None), report)
    return found


def test_one_policy_per_rule_with_matching_enforcement():
    assert list(POLICIES) == [r.id for r in RULES]
    for r in RULES:
        p = POLICIES[r.id]
        assert isinstance(p, StackValidationPolicy if r.stack else ResourceValidationPolicy)
        want = EnforcementLevel.MANDATORY if r.severity == MANDATORY else EnforcementLevel.ADVISORY
        assert p.enforcement_level == want
        assert r.title in p.description


@pytest.mark.parametrize("rule_id", [r.id for r in RULES])
def test_policy_reports_what_the_rule_finds_on_the_bad_stack(rule_id):
    resources = bad_stack()
    expected = sorted((v.message, v.urn) for v in evaluate(resources, [RULES_BY_ID[rule_id]]))
    assert expected, f"{rule_id}: the bad stack should break it"
    assert sorted(run_policy(POLICIES[rule_id], resources)) == expected


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_policies_quiet_on_shipped_stacks(stack):
    resources = shipped(stack)
    for name, policy in POLICIES.items():
        assert run_policy(policy, resources) == [], name


def test_violation_carries_the_resource_urn():
    found = run_policy(POLICIES["model-cache-pvc-protected"], bad_stack())
    assert found == [(found[0][0], "urn:pulumi:prod::kserve-preflight::kubernetes:core/v1:PersistentVolumeClaim"
                                   "::model-cache-pvc")]


def test_pack_layout_follows_the_reference():
    spec = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert spec["runtime"] == {"name": "python", "options": {"virtualenv": "venv"}}
    assert spec.get("version")
    reqs = (POLICY_DIR / "requirements.txt").read_text()
    assert "pulumi-policy==1.21.0" in reqs


def test_main_only_constructs_the_pack():
    """policy/__main__.py: imports, the sys.path set-up, and exactly one top-level PolicyPack(...) call."""
    tree = ast.parse((POLICY_DIR / "__main__.py").read_text())
    calls = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    assert [ast.unparse(c.value.func) for c in calls] == ["PolicyPack"]
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_the_pack_imports_only_what_its_requirements_install():
    """policy/requirements.txt installs pulumi and pulumi-policy only: the rules must not pull in the project's
    heavier dependencies (the analyzer would fail to start under `pulumi preview --policy-pack policy`)."""
    import subprocess
    import sys

    from stackconfig.load import ROOT

    code = ("import sys; sys.path.insert(0, '.'); import policy.pack; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'simpy', 'numpy', 'jsonschema', "
            "'kubernetes_validate', 'rich', 'matplotlib', 'pulumi_aws', 'pulumi_kubernetes'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

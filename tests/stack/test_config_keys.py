"""Keys that used to be read as something else without a word (review rev-fuzz, findings 3, 4 and 7): a stack not
named dev/staging/prod without `environment` (it became dev: prod's refusals and the node group's protect gone), a
misspelt namespace (`kserve-prefligth:coldStart`: the section fell back to its defaults), a misspelt top-level key
of the stack file (`confg:`), and a refusal made inside the program reported as one made-up problem. Each is an
InputError naming the key, the value and what is allowed; each has a passing control."""

from __future__ import annotations

import copy
import shutil
from dataclasses import replace

import pytest

from offline import run_program
from stackconfig.load import ROOT, load_stack, program_refusal, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

from tests.program_refusal import refusal

P = "kserve-preflight"


def _values(stack: str) -> dict:
    project, values = stack_config_values(stack)
    return project_values(values, project)


# -- environment -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["production", "prod-eu", "test"])
def test_environment_is_required_for_a_stack_not_named_dev_staging_or_prod(name):
    """prod's config without `environment` under stack `production` parsed as dev: its scale-to-zero refusal and
    the node group's `protect` were gone."""
    values = _values("prod")
    values.pop("environment")
    with pytest.raises(InputError) as err:
        parse_stack_config(values, P, name)
    [problem] = err.value.problems
    assert problem.path == f"{P}:environment" and problem.value is None
    assert "expected one of dev, staging, prod" in problem.allowed and repr(name) in problem.allowed


def test_environment_given_or_defaulted_from_the_stack_name_is_accepted():
    values = _values("prod")
    assert parse_stack_config(copy.deepcopy(values), P, "production").environment == "prod"  # stated: kept
    values.pop("environment")
    assert parse_stack_config(values, P, "prod").environment == "prod"   # default: the stack's name


def test_a_stated_environment_still_applies_its_rules_under_another_stack_name():
    """The control of the old behaviour: `production` with environment prod is refused like prod itself."""
    values = _values("prod")
    values["services"][1]["minReplicas"] = 0
    with pytest.raises(InputError, match=r"services\[1\]\.minReplicas: got 0; expected >= 1 in prod"):
        parse_stack_config(values, P, "production")


# -- namespaces --------------------------------------------------------------------------------------------------

def _renamed(values: dict, key: str, new: str) -> dict:
    out = dict(values)
    out[new] = out.pop(key)
    return out


@pytest.mark.parametrize("stack, key, new, hint", [
    ("prod", f"{P}:coldStart", "kserve-prefligth:coldStart", f"did you mean '{P}:coldStart'"),
    ("prod", f"{P}:devicePlugin", "kserve-prefligth:devicePlugin", f"did you mean '{P}:devicePlugin'"),
    ("dev", f"{P}:gpuNodeGroup", "kserve-prefligth:gpuNodeGroup", f"did you mean '{P}:gpuNodeGroup'"),
    ("dev", f"{P}:cluster", "kservepreflight:cluster", f"did you mean '{P}:cluster'"),
])
def test_a_namespace_close_to_the_projects_is_refused(stack, key, new, hint):
    """`kserve-prefligth:coldStart` was dropped silently: prod ran with the default cold-start priors."""
    project, values = stack_config_values(stack)
    with pytest.raises(InputError) as err:
        project_values(_renamed(values, key, new), project)
    [problem] = err.value.problems
    assert problem.path == new and problem.value == new.split(":")[0]
    assert f"expected the namespace {P!r} (this project's keys): {new.split(':')[0]!r} is close to it" in \
        problem.allowed
    assert hint in problem.allowed


@pytest.mark.parametrize("stack, key, new", [
    ("dev", f"{P}:gpuNodeGroup", "kserve:gpuNodeGroup"),   # not close by difflib (0.55), but a section's name
    ("prod", f"{P}:coldStart", "inference:coldStart"),
    ("dev", f"{P}:cluster", "kserve:cluster"),   # a shared word, and the project's own `cluster` is missing
])
def test_a_section_under_another_namespace_is_refused(stack, key, new):
    project, values = stack_config_values(stack)
    with pytest.raises(InputError) as err:
        project_values(_renamed(values, key, new), project)
    [problem] = err.value.problems
    short = new.split(":")[1]
    assert problem.path == new and problem.value == new.split(":")[0]
    assert f"expected the namespace {P!r} for {short!r}, one of this project's sections" in problem.allowed
    assert f"did you mean '{P}:{short}'" in problem.allowed


@pytest.mark.parametrize("extra", [
    {"datadog:apiKey": "x"}, {"awsx:vpc": "x"}, {"aws-native:region": "us-east-1"}, {"eks:foo": "1"},
    {"random:region": "x"}, {"awz:region": "us-east-1"},
    # other packages' keys named like a shared section word, beside the project's own
    {"kubernetes:cluster": "arn:aws:eks:us-east-1:123456789012:cluster/gpu"}, {"azure:environment": "public"},
])
def test_another_packages_keys_pass(extra):
    """An ESC environment the stack imports (`environment:` in the stack file) may carry any provider's config,
    and the CLI hands all of it to the program: review rev-diff finding 5 (each was refused)."""
    project, values = stack_config_values("dev")
    assert project_values({**values, **extra}, project) == project_values(values, project)


def test_a_key_without_a_namespace_is_refused():
    project, values = stack_config_values("dev")
    with pytest.raises(InputError) as err:
        project_values(_renamed(values, f"{P}:cluster", "cluster"), project)
    [problem] = err.value.problems
    assert problem.path == "cluster" and f"did you mean '{P}:cluster'" in problem.allowed


def test_the_providers_and_pulumis_namespaces_are_accepted():
    project, values = stack_config_values("dev")
    extra = {"aws:profile": "inference-admin", "kubernetes:context": "x", "pulumi:tags": {"team": "ml"}}
    assert project_values({**values, **extra}, project) == project_values(values, project)


def test_the_program_refuses_a_misspelt_namespace_before_any_resource(registered):
    """The same check in `load_from_pulumi` (what `pulumi up` runs): the CLI passes every namespace through."""
    def edit(c):
        c["kserve-prefligth:coldStart"] = c.pop(f"{P}:coldStart")
    message = refusal("prod", edit, registered)
    assert "kserve-prefligth:coldStart: got 'kserve-prefligth'" in message
    # control: the stack as shipped registers its resources (the gate off: its simulations are not the point)
    assert run_program("prod", edit=lambda c: c.__setitem__(f"{P}:gate", {"enabled": False})).resources


# -- the stack file's own keys -----------------------------------------------------------------------------------

def _root(tmp_path, body: str, stack: str = "typo"):
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(body)
    return tmp_path


def test_an_unknown_top_level_key_of_the_stack_file_is_named(tmp_path):
    """`confg:` used to surface as "cluster: this key is required", never naming `confg`."""
    dev = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    root = _root(tmp_path, dev.replace("config:", "confg:", 1))
    with pytest.raises(InputError) as err:
        stack_config_values("typo", root)
    [problem] = err.value.problems
    assert problem.path.endswith("Pulumi.typo.yaml: confg") and problem.value == "confg"
    assert "config, secretsprovider, encryptedkey, encryptionsalt, environment" in problem.allowed
    assert "did you mean 'config'" in problem.allowed


def test_pulumis_stack_file_keys_are_accepted(tmp_path):
    dev = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    root = _root(tmp_path, "secretsprovider: passphrase\nencryptionsalt: v1:abc\nenvironment: [inference/dev]\n"
                 + dev, "dev")
    assert load_stack("dev", root).environment == "dev"


# -- refusals made inside the program ----------------------------------------------------------------------------

def _prod_without_cold_start_priors(monkeypatch):
    """prod with the default coldStart priors: the config parses, the program refuses its progress deadlines
    (gate/rollout_capacity.py) when it runs, after `preflight check` has loaded the stack."""
    import offline

    project, values = stack_config_values("prod")
    values.pop(f"{P}:coldStart")
    monkeypatch.setattr(offline, "stack_config_values", lambda stack, *a, **k: (project, copy.deepcopy(values)))
    return parse_stack_config(project_values(copy.deepcopy(values), project), project, "prod")


def test_preflight_check_reports_the_programs_own_problems(monkeypatch):
    """They came back as one problem `stacks/Pulumi.<stack>.yaml: got '(rejected by the program)'`, the real key,
    value and allowed values inside its text."""
    import preflight.check as cli
    from gate.rollout_capacity import capacity_problems

    cfg = _prod_without_cold_start_priors(monkeypatch)
    quick = replace(cfg, gate=replace(cfg.gate, enabled=False))   # the program runs without the gate anyway
    monkeypatch.setattr(cli, "load_stack", lambda stack, *a, **k: quick)
    with pytest.raises(InputError) as err:
        cli.check("prod", executor=None)
    expected = [f"{P}:{p}" for p in capacity_problems(cfg, [])]
    assert expected and [str(p) for p in err.value.problems] == expected
    assert err.value.problems[0].path == f"{P}:services[0].annotations[serving.knative.dev/progress-deadline]"
    assert err.value.problems[0].value is None and "unset, so Knative's default 600s" in str(err.value)
    assert err.value.source == "stacks/Pulumi.prod.yaml" and "rejected by the program" not in str(err.value)


def test_the_policy_report_reports_the_programs_own_problems(monkeypatch):
    from policy.report import check_stack

    _prod_without_cold_start_priors(monkeypatch)
    with pytest.raises(InputError) as err:
        check_stack("prod")
    assert err.value.problems[0].value is None and err.value.source == "stacks/Pulumi.prod.yaml"


def test_a_program_refusal_names_the_stack_file_under_stackConfigDir(tmp_path):
    import pulumi

    from program import ConfigRefusal
    from validation.errors import Problem

    (tmp_path / "Pulumi.yaml").write_text("name: kserve-preflight\nstackConfigDir: config\n")
    problem = Problem(f"{P}:gate.seed", -1, "expected an integer >= 0")
    err = program_refusal("dev", ConfigRefusal("invalid stack config: …", [problem]), tmp_path)
    assert err.problems == [problem] and err.source == "config/Pulumi.dev.yaml"
    other = program_refusal("dev", pulumi.RunError("admission: …"), tmp_path)   # no problems: the message, named
    assert other.problems[0].path == "config/Pulumi.dev.yaml" and other.problems[0].allowed == "admission: …"

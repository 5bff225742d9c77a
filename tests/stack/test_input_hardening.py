"""Issue 9's reproductions for the stack config: each mistake is an InputError naming key, value and what is
allowed, at load time, whether or not the gate runs; no other exception, no unbounded run."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time

import pulumi
import pytest

from offline import run_program
from stackconfig.load import ROOT, load_stack, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"
KN = "autoscaling.knative.dev/"


def _values(stack: str) -> tuple[str, dict]:
    project, values = stack_config_values(stack)
    return project, project_values(values, project)


def _problems(stack: str, edit) -> str:
    project, values = _values(stack)
    edit(values)
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, stack)
    return str(err.value)


def _accepts(stack: str, edit) -> None:
    project, values = _values(stack)
    edit(values)
    parse_stack_config(values, project, stack)


def _svc(c, name=None):
    return c["services"][0] if name is None else next(s for s in c["services"] if s["name"] == name)


def _no_gate(c):
    """The gate off and the service without workload/SLO: range checks must not depend on either."""
    c["gate"] = {"enabled": False}
    for s in c["services"]:
        s.pop("workload", None)
        s.pop("slo", None)


def _ann(key, value):
    def edit(c):
        _no_gate(c)
        _svc(c).setdefault("annotations", {})[KN + key] = value
    return edit


def _vision_policy(**policy):
    def edit(c):
        _no_gate(c)
        _svc(c, "vision")["hpa"]["behavior"]["scaleDown"]["policies"] = [{"type": "Pods", "value": 1,
                                                                           "periodSeconds": 60, **policy}]
    return edit


# (stack, edit, key path in the message, what is allowed) — one row per reproduction and per threshold.
CASES = [
    ("dev", lambda c: (c.__setitem__("catalog", {"instanceTypes": {"g7x.large": {"gpu": "L40", "gpus": 1}}}),
                       c["gpuNodeGroup"].update(instanceTypes=["g7x.large"])),
     "catalog.instanceTypes.g7x.large.gpu: got 'L40'", "expected a GPU from the catalog"),
    ("dev", lambda c: c["gpuNodeGroup"].update(instanceTypes=[]), "gpuNodeGroup.instanceTypes: got []",
     "expected at least one GPU instance type"),
    ("dev", _ann("activation-scale", "1"), "activation-scale]: got '1'", "expected an integer >= 2"),
    ("dev", _ann("initial-scale", "-1"), "initial-scale]: got '-1'", "expected an integer >= 0"),
    ("dev", _ann("initial-scale", "1.5"), "initial-scale]: got '1.5'", "expected an integer >= 0"),
    ("dev", _ann("initial-scale", "nan"), "initial-scale]: got 'nan'", "expected an integer >= 0"),
    ("dev", _ann("panic-threshold-percentage", "50"), "panic-threshold-percentage]: got '50'", "between 110 and 1000"),
    ("dev", _ann("panic-threshold-percentage", "109.9"), "panic-threshold-percentage]", "between 110 and 1000"),
    ("dev", _ann("panic-threshold-percentage", "1000.1"), "panic-threshold-percentage]", "between 110 and 1000"),
    ("dev", _ann("target-utilization-percentage", "0"), "target-utilization-percentage]: got '0'", "between 1 and 100"),
    ("dev", _ann("target-utilization-percentage", "250"), "target-utilization-percentage]", "between 1 and 100"),
    ("dev", _ann("scale-down-delay", "2h"), "scale-down-delay]: got '2h'", "between 0s and 3600s"),
    ("dev", _ann("scale-down-delay", "1h0m1s"), "scale-down-delay]", "between 0s and 3600s"),
    ("dev", _ann("window", "5s"), "window]: got '5s'", "between 6s and 3600s"),
    ("dev", _ann("window", "61m"), "window]: got '61m'", "between 6s and 3600s"),
    ("dev", _ann("panic-window-percentage", "0.5"), "panic-window-percentage]", "between 1 and 100"),
    ("dev", _ann("target-burst-capacity", "-0.5"), "target-burst-capacity]: got '-0.5'", "or -1 for unlimited"),
    ("staging", _vision_policy(periodSeconds=0), "behavior.scaleDown.policies[0].periodSeconds: got 0",
     "between 1 and 1800"),
    ("staging", _vision_policy(periodSeconds=1801), "periodSeconds: got 1801", "between 1 and 1800"),
    ("staging", lambda c: (_no_gate(c), _svc(c, "vision").update(containerConcurrency=4)),
     "services[1].containerConcurrency: got 4", "expected none in Standard (RawDeployment) mode"),
    ("staging", lambda c: (_no_gate(c), _svc(c, "vision").update(timeout=60)),
     "services[1].timeout: got 60", "expected none in Standard (RawDeployment) mode"),
    ("dev", lambda c: c["cluster"].update(subnetIds=["null"]), "cluster.subnetIds[0]: got 'null'",
     "expected a subnet ID"),
    ("dev", lambda c: c["cluster"].update(subnetIds=["\U0001F680gpu"]), "cluster.subnetIds[0]", "expected a subnet ID"),
    ("dev", lambda c: c["cluster"].update(createNodeRole=False, nodeRoleArn="my-role"), "cluster.nodeRoleArn",
     "expected an IAM role ARN"),
    ("dev", lambda c: _svc(c).setdefault("runtime", {}).update(env={"MY VAR": "1"}),
     "services[0].runtime.env.MY VAR", "expected an environment variable name"),
    ("dev", lambda c: c["gpuNodeGroup"].update(labels={"team": "ml platform"}), "gpuNodeGroup.labels.team",
     "expected a label value"),
    ("dev", lambda c: c["gpuNodeGroup"].update(labels={"bad key!": "x"}), "gpuNodeGroup.labels.bad key!",
     "expected a label key"),
    ("dev", lambda c: c["gpuNodeGroup"].update(taints=[{"key": "nvidia.com/gpu:x", "value": "true"}]),
     "gpuNodeGroup.taints[0].key", "expected a taint key"),
    ("dev", lambda c: c["gpuNodeGroup"].update(taints=[{"key": "nvidia.com/gpu", "value": "true"}] * 2),
     "gpuNodeGroup.taints[1].key", "expected one taint per key and effect"),
    ("dev", lambda c: c["modelCache"].update(storageClass="EFS SC"), "modelCache.storageClass: got 'EFS SC'",
     "StorageClass name"),
    ("dev", lambda c: _svc(c).setdefault("runtime", {}).update(image="vllm/vLLM openai:v1"),
     "services[0].runtime.image", "expected an image reference"),
    ("dev", lambda c: c.__setitem__("devicePlugin", {"image": "nvcr.io/nvidia/k8s device plugin:v1"}),
     "devicePlugin.image", "expected an image reference"),
    ("dev", lambda c: _svc(c)["model"].update(storageUri="s3://"), "services[0].model.storageUri: got 's3://'",
     "s3://<bucket>/<prefix>"),
    ("dev", lambda c: _svc(c)["model"].update(storageUri="hf://a b"), "services[0].model.storageUri: got 'hf://a b'",
     "hf://<org>/<model>"),
    # kserve_storage `_download_hf`: exactly owner/model[:revision]; a trailing "/" fails the download on the cluster
    ("dev", lambda c: _svc(c)["model"].update(storageUri="hf://meta-llama/Meta-Llama-3-8B-Instruct/"),
     "services[0].model.storageUri: got 'hf://meta-llama/Meta-Llama-3-8B-Instruct/'", "(no trailing /)"),
    ("dev", lambda c: _svc(c)["model"].update(storageUri="hf://meta-llama/Meta-Llama-3-8B-Instruct/original"),
     "services[0].model.storageUri", "hf://<org>/<model>[:<revision>]"),
    # an oci:// model is a KServe modelcar, whose injected containers KServe never gives
    # allowPrivilegeEscalation: false (review rev13-kserve F3); with the cache on the prefetch cannot download it
    ("dev", lambda c: _svc(c)["model"].update(storageUri="oci://registry.example.com/models/llama:v1"),
     "services[0].model.storageUri: got 'oci://registry.example.com/models/llama:v1'",
     "prefetch runs KServe's storage initializer, which cannot download one"),
    ("dev", lambda c: (c["modelCache"].update(enabled=False),
                       _svc(c)["model"].update(storageUri="oci://registry.example.com/models/llama:v1")),
     "services[0].model.storageUri: got 'oci://registry.example.com/models/llama:v1'",
     "without allowPrivilegeEscalation: false"),
    ("dev", lambda c: c.__setitem__("coldStart", {"imageGib": 10 ** 310}), "coldStart.imageGib",
     "expected a number between 0 and 4096"),
    ("staging", lambda c: _svc(c, "vision").pop("runtime"), "services[1].runtime.engine: got 'vllm'",
     "expected an engine that serves vision models (triton)"),  # found by the fuzzer: the gate refused it later
    ("staging", lambda c: _svc(c, "chat").setdefault("runtime", {}).update(engine="triton"),
     "services[0].runtime.engine: got 'triton'", "expected an engine that serves llm models (vllm, tgi, naive)"),
    ("dev", lambda c: _svc(c)["workload"].update(rate=1e4), "services[0].workload: got 'the rollout run, until past "
     "the progress deadline (1020 s): chat 10,200,000 requests'", "request budget of 2,000,000 requests per run"),
]


@pytest.mark.parametrize("stack, edit, where, allowed", CASES)
def test_mistake_is_an_input_error_at_load(stack, edit, where, allowed):
    text = _problems(stack, edit)
    assert where in text and allowed in text, text


@pytest.mark.parametrize("stack, edit", [
    ("dev", _ann("activation-scale", "2")), ("dev", _ann("initial-scale", "0")),
    ("dev", _ann("panic-threshold-percentage", "110")), ("dev", _ann("panic-threshold-percentage", "1000")),
    ("dev", _ann("target-utilization-percentage", "1")), ("dev", _ann("target-utilization-percentage", "100")),
    ("dev", _ann("scale-down-delay", "1h")), ("dev", _ann("window", "6s")), ("dev", _ann("window", "1h")),
    ("dev", _ann("target-burst-capacity", "-1")), ("dev", _ann("target-burst-capacity", "0.5")),
    ("staging", _vision_policy(periodSeconds=1)), ("staging", _vision_policy(periodSeconds=1800)),
    ("dev", lambda c: c["cluster"].update(subnetIds=["subnet-0a1b2c3d"])),
    ("dev", lambda c: c["cluster"].update(createNodeRole=False,
                                           nodeRoleArn="arn:aws:iam::123456789012:role/eks/gpu-node")),
    ("dev", lambda c: _svc(c)["model"].update(
        storageUri="hf://meta-llama/Meta-Llama-3-8B-Instruct:5f0b02c75b57c5855da9ae460ce51323ea669d8a")),
    # 1.94e6 requests in dev's 1,020-s rollout run (the whole gate's ≈ 141 M within a raised gate.totalRequestBudget:
    # each run's budget is the boundary here; the total's is tests/stack/test_gate_total_budget.py)
    ("dev", lambda c: (_svc(c)["workload"].update(rate=1900), c.__setitem__("gate", {"totalRequestBudget": 10 ** 9}))),
    ("dev", lambda c: (_svc(c)["workload"].update(rate=1e4),
                       c.__setitem__("gate", {"requestBudget": 11 * 10 ** 6, "totalRequestBudget": 10 ** 9}))),
], ids=lambda v: "" if callable(v) else v)
def test_values_at_the_boundary_are_accepted(stack, edit):
    _accepts(stack, edit)


def test_bad_cluster_name_blames_only_cluster_name():
    text = _problems("dev", lambda c: c["cluster"].update(name="my cluster"))
    assert "cluster.name: got 'my cluster'" in text
    assert "gpuNodeGroup.name" not in text


def test_budget_refusal_is_immediate():
    start = time.process_time()
    _problems("dev", lambda c: _svc(c)["workload"].update(rate=1e6))
    assert time.process_time() - start < 5  # was: minutes and gigabytes before failing


def test_unknown_catalog_gpu_stops_the_program_and_the_clis(registered, tmp_path):
    def edit(c):
        c[f"{P}:catalog"] = {"instanceTypes": {"g7x.large": {"gpu": "L40", "gpus": 1}}}
        c[f"{P}:gpuNodeGroup"]["instanceTypes"] = ["g7x.large"]

    with pytest.raises(pulumi.RunError, match="catalog.instanceTypes.g7x.large.gpu: got 'L40'"):
        run_program("dev", edit=edit)
    assert registered == []

    stacks = _copy_project(tmp_path)
    text = (stacks / "Pulumi.dev.yaml").read_text().replace("instanceTypes: [g6e.xlarge]", "instanceTypes: [g7x.large]")
    text += "  kserve-preflight:catalog: {instanceTypes: {g7x.large: {gpu: L40, gpus: 1}}}\n"
    (stacks / "Pulumi.dev.yaml").write_text(text)
    with pytest.raises(InputError, match="g7x.large.gpu"):
        load_stack("dev", tmp_path)


def _copy_project(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.dev.yaml").write_text((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    return tmp_path / "stacks"


def _with_stack_text(tmp_path, extra: str = "", replace: tuple[str, str] | None = None, raw: bytes | None = None):
    stacks = _copy_project(tmp_path)
    path = stacks / "Pulumi.dev.yaml"
    if raw is not None:
        path.write_bytes(raw)
        return path
    text = path.read_text()
    if replace:
        text = text.replace(*replace)
    path.write_text(text + extra)
    return path


def test_yaml_dates_under_other_namespaces_reach_the_program_as_text(tmp_path):
    _with_stack_text(tmp_path, "  aws:deployDate: 2024-01-01\n  aws:stamp: 2024-01-01T10:00:00Z\n")
    project, values = stack_config_values("dev", tmp_path)
    assert values["aws:deployDate"] == "2024-01-01"
    json.dumps(values)  # the offline harness hands these to the mocks as JSON
    values[f"{P}:gate"] = {"enabled": False}
    run_program("dev", values=values)


@pytest.mark.parametrize("extra, where, allowed", [
    ("  aws:blob: !!binary aGVsbG8=\n", "aws:blob", "binary data has no JSON form"),
    ("  aws:loop: &a [1, *a]\n", "config.aws:loop[1]", "an alias may not refer to a node that contains it"),
    ("  5: x\n", "config.5: got 'x'", "expected a string key, got int 5 (quote it)"),
    ("  kserve-preflight:coldStart: {imageGib: 1" + "0" * 310 + "}\n", "coldStart.imageGib",
     "at most 30 digits"),
    ("  aws:deep: " + "[" * 3000 + "]" * 3000 + "\n", "Pulumi.dev.yaml", "nested at most"),
    ("  aws:deep: " + "[" * 100 + "]" * 100 + "\n", "Pulumi.dev.yaml", "nested at most 64 levels deep"),
    ("  kserve-preflight:gate: {enabled: [}\n",
     f"Pulumi.dev.yaml, line {len((ROOT / 'stacks' / 'Pulumi.dev.yaml').read_text().splitlines()) + 1}, column 37",
     "expected valid YAML"),
], ids=["binary", "recursive-anchor", "integer-key", "huge-int", "3000-deep", "100-deep", "syntax-error"])
def test_unusable_yaml_is_an_input_error(tmp_path, extra, where, allowed):
    _with_stack_text(tmp_path, extra)
    with pytest.raises(InputError) as err:
        load_stack("dev", tmp_path)
    assert where in str(err.value) and allowed in str(err.value), str(err.value)


def test_integer_key_under_the_project_namespace(tmp_path):
    _with_stack_text(tmp_path, replace=("kserve-preflight:modelCache:\n    sizeGib: 100",
                                        "kserve-preflight:modelCache:\n    sizeGib: 100\n    7: x"))
    with pytest.raises(InputError, match=r"modelCache.7: got 'x'; expected a string key"):
        load_stack("dev", tmp_path)


def test_non_utf8_stack_file_names_the_file_and_line(tmp_path):
    path = _with_stack_text(tmp_path, raw=(ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes().replace(
        b"# dev: small", b"# d\xe9v: small"))
    with pytest.raises(InputError) as err:
        load_stack("dev", tmp_path)
    assert str(path) in str(err.value) and "not UTF-8" in str(err.value) and "line 1" in str(err.value)


def test_deep_json_from_the_pulumi_cli_is_an_input_error():
    for depth in (100, 3000):
        with pytest.raises(InputError, match="nested at most 64 levels deep"):
            project_values({f"{P}:catalog": "[" * depth + "]" * depth}, P)


def test_huge_and_deep_values_from_the_pulumi_cli_are_input_errors(registered):
    """The program's own path: the CLI hands objects over as JSON strings."""
    def deep(c):
        c[f"{P}:coldStart"] = {"imageGib": 10 ** 310}

    with pytest.raises(pulumi.RunError, match="coldStart.imageGib"):
        run_program("dev", edit=deep)
    assert registered == []


def test_an_unexpected_exception_in_the_program_is_one_line_with_a_hint(monkeypatch, registered):
    import program

    def broken(cfg):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(program, "run_gate", broken)
    with pytest.raises(pulumi.RunError) as err:
        run_program("dev")
    text = str(err.value)
    assert text.startswith("internal error: ZeroDivisionError: division by zero")
    assert "please report it" in text and "\n" not in text
    assert registered == []


@pytest.mark.parametrize("argv", [
    ["-m", "manifests", "render", "--stack", "dev", "--out", "{tmp}"],
    ["-m", "preflight", "check", "--stack", "dev"],
    ["-m", "policy.report", "--stack", "dev"],
], ids=["render", "preflight", "policy-report"])
def test_clis_turn_a_bad_stack_file_into_exit_2(tmp_path, argv):
    """A non-UTF-8 stack file (was UnicodeDecodeError) through each CLI, run from another working directory."""
    import shutil

    clone = tmp_path / "clone"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".git", "__pycache__", ".hypothesis", "rendered"))
    path = clone / "stacks" / "Pulumi.dev.yaml"
    path.write_bytes(path.read_bytes().replace(b"# dev: small", b"# d\xe9v: small"))
    proc = subprocess.run([sys.executable, *[a.format(tmp=tmp_path / "out") for a in argv]], capture_output=True,
                          text=True, cwd=clone, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "not UTF-8" in proc.stderr and "Traceback" not in proc.stderr


def test_guarded_cli_reports_an_unexpected_error_in_one_line(monkeypatch, capsys):
    import manifests.__main__ as render_cli

    monkeypatch.setattr(render_cli, "render", lambda stack, out: {}["boom"])
    with pytest.raises(SystemExit) as exc:
        render_cli.main(["render", "--stack", "dev"])
    err = capsys.readouterr().err
    assert exc.value.code == 3
    assert err.startswith("error: internal error: KeyError: 'boom'") and "please report it" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_copies_of_the_shipped_stacks_stay_valid():
    """The shipped stacks pass every new format check (a control for the table above)."""
    for stack in ("dev", "staging", "prod"):
        project, values = _values(stack)
        parse_stack_config(copy.deepcopy(values), project, stack)


@pytest.mark.parametrize("key, value", [
    ("serving.knative.dev/progress-deadline", " 15m"), ("serving.knative.dev/progress-deadline", "15m\n"),
    (KN + "window", " 120s"), (KN + "scale-down-delay", "60s "),
])
def test_knative_durations_with_whitespace_are_refused_like_go(key, value):
    """Knative's webhook runs time.ParseDuration on the annotation verbatim (serving pkg/apis/serving/v1/
    revision_validation.go, pkg/apis/autoscaling/annotation_validation.go): Go refuses any whitespace."""
    def edit(c, v=value):
        _no_gate(c)
        _svc(c).setdefault("annotations", {})[key] = v
    text = _problems("dev", edit)
    assert (f"annotations.{key}: got {value!r}" in text or f"annotations[{key}]: got {value!r}" in text), text
    _accepts("dev", lambda c: edit(c, value.strip()))  # control

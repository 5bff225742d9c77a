"""`python -m policy.report`: a rich table per stack, exit 0/1/2."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console

import policy.stack
from policy import report
from policy.rules import RULES
from policy_fixtures import FIXTURES, bad_stack, flapping, write_stack
from stackconfig.load import ROOT


def _run(argv, monkeypatch=None, resources=None):
    if resources is not None:
        monkeypatch.setattr(policy.stack, "stack_resources", lambda stack, edit=None, stack_dir=None: resources)
    out = io.StringIO()
    code = report.main(argv, Console(file=out, width=200))
    return code, out.getvalue()


FIXTURE_DIR = ["--stack-dir", str(FIXTURES)]   # the frozen shipped stacks: a team's stacks/ may differ


def test_prod_passes():
    code, out = _run([*FIXTURE_DIR, "--stack", "prod"])
    assert code == 0
    assert "PASS stack prod: 0 mandatory" in out


def test_bad_stack_fails_with_rule_resource_and_fix(monkeypatch):
    code, out = _run([*FIXTURE_DIR, "--stack", "prod"], monkeypatch, bad_stack())
    assert code == 1
    assert "FAIL stack prod" in out
    for r in RULES:
        assert r.id in out
    assert "PersistentVolumeClaim model-cache-pvc" in out and "Add protect=True" in out


def test_mandatory_only_hides_advisory(monkeypatch):
    _, out = _run([*FIXTURE_DIR, "--stack", "prod", "--mandatory-only"], monkeypatch, bad_stack())
    assert "k8s-recommended-labels" not in out and "isvc-gpu-limit" in out


def test_unknown_stack_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        report.main([*FIXTURE_DIR, "--stack", "nope"], Console(file=io.StringIO()))
    assert exc.value.code == 2
    assert "--stack: got 'nope'; expected one of dev, prod, staging" in capsys.readouterr().err


def test_rule_table_lists_every_rule():
    code, out = _run(["--rules"])
    assert code == 0 and all(r.id in out for r in RULES)


def test_command_line_entry_point():
    proc = subprocess.run([sys.executable, "-m", "policy.report", *FIXTURE_DIR, "--stack", "prod"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # a bound, not a speed test
    assert proc.returncode == 0, proc.stderr
    assert "PASS stack prod" in proc.stdout and "Traceback" not in proc.stderr


def test_policy_findings_do_not_wait_for_the_slo_gate():
    """docs/policy.md: `pytest tests/policy` and `python -m policy.report` list a stack's mandatory violations.
    With the SLO gate on, a stack that misses its SLO stopped the program (pulumi.RunError) before any rule ran;
    the rules judge the manifests, so they run with the gate off."""
    import pulumi

    from offline import run_program
    from policy.rules import evaluate, mandatory

    def hopeless(config: dict) -> None:   # an SLO no GPU service meets, and a node group without its taint
        config["kserve-preflight:services"][0]["slo"]["p99LatencyS"] = 0.001
        config["kserve-preflight:gpuNodeGroup"]["taints"] = []

    with pytest.raises(pulumi.RunError, match="SLO gate"):   # control: the program itself stops at the gate
        run_program("dev", stack_dir=FIXTURES,
                    edit=lambda c: (hopeless(c), c.__setitem__("kserve-preflight:gate", {"durationS": 300})))
    findings = mandatory(evaluate(policy.stack.stack_resources("dev", edit=hopeless, stack_dir=FIXTURES)))
    assert "nodegroup-gpu-taint" in {v.rule for v in findings}


def test_stack_dir_checks_every_stack_of_a_teams_own_folder(tmp_path):
    """Finding 9 (rev13-policy): a team's stacks live in a folder of their own, under names of their own."""
    folder = write_stack(tmp_path / "ci-stacks", "qa")
    write_stack(folder, "qa-window6", flapping)
    code, out = _run(["--stack-dir", str(folder)])
    assert code == 1
    assert "PASS stack qa: 0 mandatory" in out and "FAIL stack qa-window6: 1 mandatory" in out
    assert "isvc-scale-down-stabilization" in out
    code, out = _run(["--stack-dir", str(folder), "--stack", "qa"])
    assert code == 0 and "qa-window6" not in out


def test_stack_dir_that_is_no_folder_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        report.main(["--stack-dir", str(tmp_path / "nope")], Console(file=io.StringIO()))
    assert exc.value.code == 2
    assert "--stack-dir: got" in capsys.readouterr().err


def test_preflight_check_reads_a_stack_dir(tmp_path):
    import json

    from preflight.check import main as preflight_main

    folder = write_stack(tmp_path, "qa", lambda c: (flapping(c), c.__setitem__("kserve-preflight:gate",
                                                                               {"enabled": False})))
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = preflight_main(["check", "--stack-dir", str(folder), "--stack", "qa", "--json", "--no-cache"])
    result = json.loads(out.getvalue())
    assert code == 1 and result["stacks"][0]["stack"] == "qa"
    [finding] = result["stacks"][0]["policy"]
    assert finding["rule"] == "isvc-scale-down-stabilization"
    assert finding["key"] == "kserve-preflight:services[0].annotations"   # finding 8: the key the user edits
    assert finding["stack_file"] == str(folder / "Pulumi.qa.yaml") and finding["service"] == "chat"


def test_a_refused_stack_does_not_stop_the_others(tmp_path, capsys):
    """Finding 10 (rev13-policy): the first refused stack ended the run (exit 2) and later stacks went unchecked."""
    folder = write_stack(tmp_path, "qa-window6", flapping)
    (folder / "Pulumi.qa-badyaml.yaml").write_text("config: [unclosed\n")
    write_stack(folder, "qa-maxrep", lambda c: c["kserve-preflight:services"][0].update(maxReplicas=99))
    code, out = _run(["--stack-dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 2   # the worst: a config error
    assert "FAIL stack qa-window6: 1 mandatory" in out and "isvc-scale-down-stabilization" in out
    assert "ERROR stack qa-badyaml" in out and "ERROR stack qa-maxrep" in out
    assert "Pulumi.qa-badyaml.yaml" in err and "services[0].maxReplicas" in err
    code, _ = _run(["--stack-dir", str(folder), "--stack", "qa-window6"])
    assert code == 1   # a mandatory violation alone


def test_violations_name_the_stack_file_service_and_key(monkeypatch):
    """Finding 8 (rev13-policy): the table named only the generated resource (`InferenceService code-isvc`)."""
    monkeypatch.setattr(policy.stack, "stack_resources", lambda stack, edit=None, stack_dir=None: bad_stack())
    found = {(v.rule, v.resource_name): v for v in report.check_stack("prod", FIXTURES)}
    timeout = found[("isvc-timeout", "code-isvc")]
    assert (timeout.key, timeout.service) == ("kserve-preflight:services[1].timeout", "code")
    assert timeout.stack_file == str(FIXTURES / "Pulumi.prod.yaml")
    assert found[("isvc-container-concurrency", "chat-isvc")].key == "kserve-preflight:services[0].containerConcurrency"
    assert found[("isvc-scale-down-stabilization", "chat-isvc")].key == "kserve-preflight:services[0].annotations"
    assert found[("nodegroup-gpu-taint", "gpu-ng")].key == "kserve-preflight:gpuNodeGroup.taints"
    assert found[("model-cache-pvc-protected", "model-cache-pvc")].key == ""   # the program's own: no stack key
    _, out = _run([*FIXTURE_DIR, "--stack", "prod"], monkeypatch, bad_stack())
    assert "kserve-preflight:services[1].timeout (code)" in out and "Pulumi.prod.yaml" in out


def test_a_prefetch_revision_finding_is_blamed_on_the_services_storage_uri(tmp_path):
    """Finding 8: with the model cache on, the unpinned hf:// model was reported on DaemonSet model-cache-prefetch,
    a resource the user never configured."""
    folder = write_stack(tmp_path, "qa", lambda c: c.__setitem__("kserve-preflight:environment", "prod"))
    [v] = [v for v in report.check_stack("qa", folder) if v.rule == "model-revision-pinned"]
    assert v.resource_name == "model-cache-prefetch"
    assert (v.key, v.service) == ("kserve-preflight:services[0].model.storageUri", "chat")


def test_a_triton_services_input_cap_finding_names_max_image_pixels(tmp_path):
    """rev13-diff F3: a Triton service's input cap is limits.maxImagePixels (config.pbtxt's image size); the
    report named limits.maxInputTokens, and adding that key left the same finding."""
    def drop_pixels(config):
        [vision] = [s for s in config["kserve-preflight:services"] if s["runtime"]["engine"] == "triton"]
        del vision["limits"]["maxImagePixels"]
    folder = write_stack(tmp_path, "qa", drop_pixels)
    [v] = [v for v in report.check_stack("qa", folder) if v.rule == "isvc-input-caps"]
    assert (v.key, v.service) == ("kserve-preflight:services[1].limits.maxImagePixels", "vision")


def test_json_output_carries_stack_rule_severity_resource_key_and_message(tmp_path, capsys):
    """Finding 11 (rev13-policy): the report had no machine-readable output."""
    import json

    folder = write_stack(tmp_path, "qa-window6", flapping)
    (folder / "Pulumi.qa-badyaml.yaml").write_text("config: [unclosed\n")
    code, out = _run(["--stack-dir", str(folder), "--json"])
    doc = json.loads(out)   # nothing but the JSON object on stdout
    assert code == 2 and doc["exit"] == 2 and doc["passed"] is False
    bad, flap = doc["stacks"]
    assert bad["stack"] == "qa-badyaml" and bad["status"] == "error" and bad["errors"]
    assert flap["status"] == "fail" and flap["mandatory"] == 1
    [v] = flap["violations"]
    assert {k: v[k] for k in ("stack", "rule", "severity", "resource", "key", "service")} == {
        "stack": "qa-window6", "rule": "isvc-scale-down-stabilization", "severity": "mandatory",
        "resource": "chat-isvc", "key": "kserve-preflight:services[0].annotations", "service": "chat"}
    assert v["stack_file"] == str(folder / "Pulumi.qa-window6.yaml") and "scale-down-delay" in v["message"]

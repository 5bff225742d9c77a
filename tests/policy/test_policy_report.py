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
from policy_fixtures import bad_stack
from stackconfig.load import ROOT


def _run(argv, monkeypatch=None, resources=None):
    if resources is not None:
        monkeypatch.setattr(policy.stack, "stack_resources", lambda stack, edit=None: resources)
    out = io.StringIO()
    code = report.main(argv, Console(file=out, width=200))
    return code, out.getvalue()


def test_prod_passes():
    code, out = _run(["--stack", "prod"])
    assert code == 0
    assert "PASS stack prod: 0 mandatory" in out


def test_bad_stack_fails_with_rule_resource_and_fix(monkeypatch):
    code, out = _run(["--stack", "prod"], monkeypatch, bad_stack())
    assert code == 1
    assert "FAIL stack prod" in out
    for r in RULES:
        assert r.id in out
    assert "PersistentVolumeClaim model-cache-pvc" in out and "Add protect=True" in out


def test_mandatory_only_hides_advisory(monkeypatch):
    _, out = _run(["--stack", "prod", "--mandatory-only"], monkeypatch, bad_stack())
    assert "k8s-recommended-labels" not in out and "isvc-gpu-limit" in out


def test_unknown_stack_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        report.main(["--stack", "nope"], Console(file=io.StringIO()))
    assert exc.value.code == 2
    assert "--stack: got 'nope'; expected one of dev, prod, staging" in capsys.readouterr().err


def test_rule_table_lists_every_rule():
    code, out = _run(["--rules"])
    assert code == 0 and all(r.id in out for r in RULES)


def test_command_line_entry_point():
    proc = subprocess.run([sys.executable, "-m", "policy.report", "--stack", "prod"], cwd=ROOT,
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
        run_program("dev", edit=lambda c: (hopeless(c), c.__setitem__("kserve-preflight:gate", {"durationS": 300})))
    findings = mandatory(evaluate(policy.stack.stack_resources("dev", edit=hopeless)))
    assert "nodegroup-gpu-taint" in {v.rule for v in findings}

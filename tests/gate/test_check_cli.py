"""`python -m preflight check`: the offline preflight report and its exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from rich.console import Console

from preflight import check as cli
import gate
from stackconfig.load import ROOT, project_values, stack_config_values
from stackconfig.schema import parse_stack_config


def test_the_default_stack_passes_every_stage(capsys):
    assert cli.main(["check", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [dev] = out["stacks"]
    assert out["passed"] and dev["stack"] == "dev" and dev["resources"] > 10
    assert dev["manifest_errors"] == [] and dev["policy"] == []
    assert dev["slo"]["chat"]["passed"] and dev["slo"]["chat"]["simulation"]["requests"] > 0


def test_the_readme_command_runs_as_a_user_would():
    proc = subprocess.run([sys.executable, "-m", "preflight", "check", "--stack", "dev"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pass stack dev" in proc.stdout and "SLO gate" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_an_unknown_stack_exits_2_without_a_traceback():
    proc = subprocess.run([sys.executable, "-m", "preflight", "check", "--stack", "qa"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--stack: got 'qa'; expected one of dev, prod, staging" in proc.stderr
    assert "Traceback" not in proc.stderr


def _failing_values() -> dict:
    project, values = stack_config_values("prod")
    values = project_values(values, project)
    values["services"][0].update(minReplicas=1, maxReplicas=1)
    values["services"][0]["annotations"].pop("autoscaling.knative.dev/initial-scale")
    return values


def _failing_check() -> cli.StackCheck:
    cfg = parse_stack_config(_failing_values(), "kserve-preflight", "prod")
    return cli.StackCheck("prod", resources=13, verdicts=gate.check_stack(cfg), cfg=cfg)


def test_a_missed_slo_fails_the_check_with_exit_1(monkeypatch, capsys):
    import preflight.advice

    failing = _failing_check()
    assert not failing.passed
    monkeypatch.setattr(cli, "check", lambda stack, console, plot, executor=None, timings=None, cache=None: failing)
    assert cli.main(["check", "--stack", "prod"]) == 1
    # the advice checks its edits against the stack file; here that is prod with chat pinned at 1 replica
    monkeypatch.setattr(preflight.advice, "stack_values", lambda cfg: _failing_values())
    buf = io.StringIO()
    cli.print_result(failing, Console(file=buf, width=300))
    text = buf.getvalue()
    assert "FAIL stack prod" in text and "p99 latency (s)" in text
    # what to do next: chat is pinned (min = max = 1), not "saturated": let it scale, as a what-if command
    assert "next for chat" in text and "SATURATED: wanted maxReplicas 100.000%" not in text
    assert "fixed at 1 replicas (minReplicas = maxReplicas) and missing its SLO: let the autoscaler add pods" in text
    assert "python -m preflight whatif --stack prod --set 'services.chat.maxReplicas=2'" in text


def test_plots_are_written(tmp_path):
    from gate.plots import plot_verdicts

    paths = plot_verdicts("prod", _failing_check().verdicts, tmp_path)
    assert paths[0].name == "prod-chat-timeline.png" and paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {p.name for p in paths} >= {"prod-chat-spike-timeline.png", "prod-code-nodeLoss-timeline.png"}


def test_an_admission_refusal_fails_the_check_before_the_program_runs(monkeypatch, capsys):
    """`preflight check` applies the webhooks' rules too: a refused object fails the stack with exit 1."""
    from stackconfig import load

    real = load.load_stack

    def refused(stack, *args, **kwargs):
        cfg = real(stack, *args, **kwargs)
        cfg.services[0].annotations["autoscaling.knative.dev/initial-scale"] = "0"
        return cfg

    monkeypatch.setattr(cli, "load_stack", refused)
    assert cli.main(["check", "--json"]) == 1
    [dev] = json.loads(capsys.readouterr().out)["stacks"]
    assert dev["resources"] == 0 and "ValidateInitialScaleAnnotation" in dev["admission"][0]


def test_timings_name_every_stage_and_the_gate_overlaps_the_program_without_changing_results(capsys):
    from simulation import replicate

    replicate.clear_cache()   # replications another test ran in this process would not reach the workers
    assert cli.main(["check", "--json", "--timings", "--workers", "2"]) == 0
    parallel = json.loads(capsys.readouterr().out)
    stages = [s["stage"] for s in parallel["timings"]["stages"]]
    assert any("Pulumi program under mocks" in s for s in stages)
    assert any("SLO gate simulations (beside" in s for s in stages)        # ran on workers, beside the program
    assert all(s["wall_s"] >= 0 for s in parallel["timings"]["stages"])
    assert any("jobs sent to the workers" in s for s in stages)              # before the program stage
    assert stages.index(next(s for s in stages if "jobs sent" in s)) < stages.index(
        next(s for s in stages if "Pulumi program" in s))
    assert parallel["timings"]["cpu_s"]["workers"] > 0     # the simulations ran in the worker processes
    assert cli.main(["check", "--json", "--timings", "--workers", "2"]) == 0
    cached = json.loads(capsys.readouterr().out)            # every replication answered from the cache
    assert cached["timings"]["cpu_s"]["workers"] == 0 and cached["stacks"] == parallel["stacks"]
    assert cli.main(["check", "--json", "--workers", "1"]) == 0
    serial = json.loads(capsys.readouterr().out)
    assert "timings" not in serial and serial["stacks"] == parallel["stacks"]

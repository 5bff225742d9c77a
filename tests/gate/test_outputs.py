"""Predictions where people look: the `predictions` stack output, `preflight check --json`, the report's labels."""

from __future__ import annotations

import io

from rich.console import Console

import gate
from offline import run_program
from preflight import check as cli
from preflight.summary import service_lines
from stackconfig.load import load_stack


def test_pulumi_up_exports_the_predictions_check_json_carries():
    exported = run_program("dev").outputs()["predictions"]
    assert exported == cli.check("dev").predictions
    chat = exported["services"]["chat"]["steady"]
    assert exported["passed"] and chat["passed"] and chat["replications"] >= 5
    assert (exported["durationS"], exported["warmupS"]) == (load_stack("dev").gate.duration_s, 0.0)
    p99 = chat["metrics"]["p99 latency (s)"]
    assert 0 <= p99["ci95"][0] <= p99["value"] <= p99["ci95"][1] and p99["replications"] == chat["replications"]
    assert {"503 rate", "error rate", "pod GPU-hours", "p99 time to first token (s)"} <= set(chat["metrics"])
    assert [c["name"] for c in chat["checks"]][:3] == ["p99 latency (s)", "error rate", "503 rate"]


def test_gpu_hours_are_each_services_own_pods():
    cfg = load_stack("prod")
    chat, code = [v for v in gate.check_stack(cfg) if v.scenario == "steady"]   # stress scenarios follow
    hours = {v.service: v.metrics["pod GPU-hours"].value for v in (chat, code)}
    window_h = (chat.report["duration_s"] - chat.report["warmup_s"]) / 3600
    for v, svc in zip((chat, code), cfg.services):
        ready = v.metrics["mean ready replicas"].value
        # pods hold their GPUs while Ready and while starting, never more than maxReplicas of them
        assert ready * svc.gpus * window_h * 0.999 <= hours[v.service] <= svc.max_replicas * svc.gpus * window_h
    assert hours["chat"] > 2 * hours["code"]


def test_the_summary_labels_latencies_the_excluded_400s_and_saturation():
    cfg = load_stack("prod")
    [chat] = [v for v in gate.check_stack(cfg) if v.service == "chat" and v.scenario == "steady"]
    text = "\n".join(service_lines(chat))
    assert "successes" in text and "all requests" in text and "input-cap 400s excluded" in text
    assert "GPU-hours of its pods" in text and f"{chat.replications} replications" in text
    # the SATURATED line exactly when some replication wanted maxReplicas or had a Pending pod: prod's chat does
    # in 1 of its 20 steady replications (the 11th wants maxReplicas 12 for 82 % of the run), so both ways
    from dataclasses import replace
    from simulation.estimates import Estimate

    at_max = chat.metrics["time at maxReplicas (fraction)"]
    assert at_max.value > 0 and f"SATURATED: wanted maxReplicas {at_max.value:.3%}" in text
    zero = Estimate(0.0, 0.0, 0.0, chat.replications)
    calm = replace(chat, metrics={**chat.metrics, "time at maxReplicas (fraction)": zero, "peak Pending pods": zero})
    assert "SATURATED" not in "\n".join(service_lines(calm))
    assert "not measured" not in text   # no warm-up: gate.warmupS says how much of the run is
    warm = replace(chat, report={**chat.report, "duration_s": 1500.0, "warmup_s": 600.0})
    assert "replications of 1500 s, the first 600 s not measured" in service_lines(warm)[0]


def test_a_passing_check_ends_with_the_deploy_command_and_where_plots_went(tmp_path):
    result = cli.check("dev", plot_dir=tmp_path)
    buf = io.StringIO()
    cli.print_result(result, Console(file=buf, width=200))
    text = buf.getvalue()
    assert f"plot written: {tmp_path / 'dev-chat-timeline.png'}" in text
    assert text.rstrip().splitlines()[-1].startswith("next: deploy with `pulumi stack select dev")


def test_a_crashing_service_gets_the_guides_fix_first_as_commands_the_config_accepts():
    """The OOM spiral (naive server, CC 4, no caps): the advice leads with CC 1 (+ scaleTarget 1) and an input cap,
    and every suggested `--set` list parses as a valid stack config."""
    import re
    import shlex

    from preflight.advice import next_steps
    from preflight.overrides import apply_sets
    from stackconfig.load import project_values, stack_config_values
    from stackconfig.schema import parse_stack_config

    project, values = stack_config_values("dev")
    values = project_values(values, project)
    chat = values["services"][0]
    chat["runtime"]["engine"] = "naive"
    chat["engineProfile"] = {"oom": "process", "generate": "concurrent", "eagerAttention": True, "allLogits": True}
    chat.update(containerConcurrency=4, scaleTarget=4, minReplicas=1, limits={})
    chat["workload"].update(rate=1.0)
    values["gpuNodeGroup"]["instanceTypes"] = ["g5.xlarge"]
    values["gate"] = {"durationS": 600}
    cfg = parse_stack_config(values, project, "dev")
    lines = next_steps(cfg, gate.check_stack(cfg), passed=False, values=values)
    assert lines[0] == "next for chat: try one of these, then `preflight check` again:"
    assert "containerConcurrency=1' --set 'services.chat.scaleTarget=1'" in lines[1]
    assert "limits.maxInputTokens=4096" in lines[2]
    for line in lines[1:]:
        sets = re.findall(r"--set ('[^']*')", line)
        assert sets, line
        parse_stack_config(apply_sets(values, [shlex.split(s)[0] for s in sets]), project, "dev")

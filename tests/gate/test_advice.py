"""`preflight check`'s advice on a miss: it follows why requests failed, and every `--set` it prints is one the
stack config's loader (and so `preflight whatif`) accepts for that service."""

from __future__ import annotations

import re
import shlex

import pytest

from gate.verdict import Check, Verdict
from preflight.advice import crash_cause, next_steps
from preflight.overrides import apply_sets
from simulation.replicate import Estimate
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config

MISS = Estimate(0.3, 0.25, 0.35, 5)
OK = Estimate(0.0, 0.0, 0.001, 5)


def _values(stack: str = "dev") -> tuple[str, dict]:
    project, values = stack_config_values(stack)
    return project, project_values(values, project)


def _standard_cpu(values: dict) -> dict:
    """The reviewer's Pulumi.cpu.yaml: dev's chat in Standard mode on a CPU HPA, minReplicas 1 of 2."""
    chat = values["services"][0]
    for key in ("containerConcurrency", "annotations", "timeout"):
        chat.pop(key, None)
    chat.update(deploymentMode="Standard", minReplicas=1, maxReplicas=2, scaleMetric="cpu", scaleTarget=80)
    return values


def _tgi(values: dict) -> dict:
    """The reviewer's Pulumi.tgi.yaml: dev's chat on TGI, CC 8, the router admitting 2."""
    chat = values["services"][0]
    chat["runtime"]["engine"] = "tgi"
    chat.update(containerConcurrency=8, scaleTarget=4, minReplicas=1, maxReplicas=2)
    chat["limits"] = {**chat["limits"], "maxConcurrentRequests": 2}
    return values


def _verdict(scenario: str, errors: dict, *, stats: dict | None = None, restarts: dict | None = None,
             metrics: dict | None = None, service: str = "chat") -> Verdict:
    report = {"errors_by_component": errors, "server_stats": stats or {}, "restart_reasons": restarts or {},
              "pod_restarts": sum((restarts or {}).values()), "duration_s": 600}
    checks = (Check("p99 latency (s)", Estimate(20, 18, 22, 5), 60), Check("error rate", MISS, 0.05),
              Check("503 rate", MISS if "503" in errors else OK, 0.05))
    return Verdict(service, checks, report, 5, scenario, metrics=metrics or {})


def _sets(line: str) -> list[str]:
    return [shlex.split(s)[0] for s in re.findall(r"--set ('[^']*')", line)]


def _assert_every_suggestion_loads(lines: list[str], project: str, values: dict, stack: str = "dev") -> None:
    for line in lines[1:]:
        sets = _sets(line)
        if sets:
            parse_stack_config(apply_sets(values, sets), project, stack)


def test_node_loss_502s_are_not_blamed_on_cuda_oom_and_get_a_knob_standard_mode_accepts():
    """Pulumi.cpu.yaml's nodeLoss miss (502s from the lost node, 0 restarts): the old advice said "502s from CUDA
    OOM crashes" and suggested containerConcurrency=1, which the loader refuses in Standard mode (whatif exit 2)."""
    project, values = _values()
    values = _standard_cpu(values)
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("nodeLoss", {"502": {"queue-proxy": 2}, "503": {"gateway": 171}}, stats={"oom_crashes": 0})
    assert crash_cause(v) == "node loss"
    lines = next_steps(cfg, [v], passed=False, values=values)
    text = "\n".join(lines)
    assert "CUDA OOM" not in text and "containerConcurrency" not in text
    assert "lost node" in text and "services.chat.minReplicas=2" in text
    _assert_every_suggestion_loads(lines, project, values)


@pytest.mark.parametrize("mode", ["Knative", "Standard"])
def test_oom_502s_get_the_guides_fix_in_the_form_the_mode_accepts(mode):
    project, values = _values()
    if mode == "Standard":
        values = _standard_cpu(values)
    values["services"][0]["limits"].pop("maxInputTokens")
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("steady", {"502": {"queue-proxy": 40}}, stats={"oom_crashes": 3},
                 restarts={"CUDA out of memory": 3})
    assert crash_cause(v) == "oom"
    lines = next_steps(cfg, [v], passed=False, values=values)
    text = "\n".join(lines)
    assert "502s from CUDA OOM crashes" in text and "limits.maxInputTokens=4096" in text
    assert ("containerConcurrency=1" in text) == (mode == "Knative")
    assert ("limits.maxBatchSize=8" in text) == (mode == "Standard")
    _assert_every_suggestion_loads(lines, project, values)


def test_502s_from_other_restarts_name_the_reason_and_suggest_no_knob():
    project, values = _values()
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("steady", {"502": {"queue-proxy": 4}}, restarts={"startup probe failed": 2})
    lines = next_steps(cfg, [v], passed=False, values=values)
    assert crash_cause(v) == "restarts" and "startup probe failed × 2" in lines[1]
    assert not any("--set" in line for line in lines)


def test_tgi_429s_point_at_the_routers_admission_limit_not_the_batch_size():
    """Pulumi.tgi.yaml: 70 % 429 from TGI's router (maxConcurrentRequests 2 < containerConcurrency 8); raising
    maxBatchSize changes nothing (the old advice), maxConcurrentRequests does."""
    project, values = _values()
    values = _tgi(values)
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("steady", {"429": {"server": 700}})
    lines = next_steps(cfg, [v], passed=False, values=values)
    text = "\n".join(lines)
    assert "maxBatchSize" not in text
    assert "services.chat.limits.maxConcurrentRequests=8" in text
    _assert_every_suggestion_loads(lines, project, values)


def test_a_suggestion_the_loader_refuses_is_left_out():
    """The filter itself: minReplicas above maxReplicas, or containerConcurrency in Standard mode, is refused."""
    project, values = _values()
    cfg = parse_stack_config(values, project, "dev")
    chat = cfg.services[0]
    from preflight.advice import Tip, accepted

    assert accepted(values, cfg, chat, Tip("ok", (("minReplicas", 1),)))
    assert not accepted(values, cfg, chat, Tip("bad", (("minReplicas", chat.max_replicas + 1),)))
    assert not accepted(_standard_cpu(values), cfg, chat, Tip("bad", (("containerConcurrency", 1),)))


STORIES = [
    ("nodeLoss", {"502": {"queue-proxy": 2}, "503": {"activator": 9, "queue-proxy": 3}}, {}),
    ("steady", {"502": {"queue-proxy": 40}, "504": {"queue-proxy": 5}}, {"oom_crashes": 2}),
    ("spike", {"503": {"queue-proxy": 30, "activator": 2}, "429": {"server": 3}}, {}),
    ("steady", {"504": {"queue-proxy": 12}}, {}),
]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "cpu", "tgi"])
@pytest.mark.parametrize("scenario, errors, stats", STORIES)
def test_every_suggestion_of_every_story_loads(stack, scenario, errors, stats):
    """Each failure story on each shipped stack (and the reviewer's Standard/CPU and TGI variants of dev), with
    saturation, Pending pods and cold starts all present: every printed `--set` list parses."""
    base = {"cpu": "dev", "tgi": "dev"}.get(stack, stack)
    project, values = _values(base)
    values = {"cpu": _standard_cpu, "tgi": _tgi}.get(stack, lambda x: x)(values)
    cfg = parse_stack_config(values, project, base)
    metrics = {"time at maxReplicas (fraction)": Estimate(0.5, 0.4, 0.6, 5),
               "peak Pending pods": Estimate(1, 1, 1, 5), "cold starts": Estimate(2, 1, 3, 5),
               "mean ready replicas": Estimate(3, 2, 4, 5)}
    verdicts = [_verdict(scenario, errors, stats=stats, metrics=metrics, service=s.name) for s in cfg.services]
    lines = next_steps(cfg, verdicts, passed=False, values=values)
    assert sum("--set" in line for line in lines) >= len(cfg.services)
    _assert_every_suggestion_loads(lines, project, values, base)

"""`preflight check`'s advice on a miss: it follows why requests failed, and every `--set` it prints is one the
stack config's loader (and so `preflight whatif`) accepts for that service."""

from __future__ import annotations

import re
import shlex

import pytest

from gate.verdict import Check, Verdict
from preflight.advice import next_steps
from preflight.advice_crash import crash_cause
from preflight.overrides import apply_sets
from simulation.estimates import Estimate
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
    """Each printed `--set` list parses, its pods fit, and its next rollout fits the node group at its initial
    scale: what `preflight check` refuses (exit 2) before any simulation."""
    from gate.rollout_capacity import rollout_problems
    from manifests.admission import check_pods_can_run

    for line in lines[1:]:
        sets = _sets(line)
        if sets:
            cfg = parse_stack_config(apply_sets(values, sets), project, stack)
            check_pods_can_run(cfg)
            assert rollout_problems(cfg) == [], line


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
    from preflight.advice_fit import accepted
    from preflight.tips import Tip

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


def _with_client(values: dict, **client) -> dict:
    values["services"][0]["client"] = client
    return values


def test_a_client_timeout_below_the_p99_of_all_requests_is_a_warning_even_on_a_pass():
    """Pulumi.retry.yaml: client timeout_s 15 with 3 retries; requests fail with 504 at ~62 s after 4 attempts, and
    the gate passes on the p99 of successes. The check says so, with a what-if the loader accepts."""
    project, values = _values()
    values = _with_client(values, timeout_s=15, max_retries=3)
    cfg = parse_stack_config(values, project, "dev")
    slow = {"p99 latency, all requests (s)": Estimate(62.0, 60.0, 64.0, 5)}
    v = Verdict("chat", (Check("p99 latency (s)", Estimate(12, 11, 13, 5), 60),), {}, 5, metrics=slow)
    lines = next_steps(cfg, [v], passed=True, values=values)
    assert lines[0].startswith("next: deploy with `pulumi stack select dev --create")
    [warning] = [line for line in lines if line.startswith("warning:")]
    assert "timeout_s 15 is below the p99 latency of all requests 62" in warning and "3 retries" in warning
    assert "--set 'services.chat.client.timeout_s=77'" in warning
    _assert_every_suggestion_loads(["", warning], project, values)
    calm = _with_client(_values()[1], timeout_s=120, max_retries=3)
    cfg = parse_stack_config(calm, project, "dev")
    assert not any("warning" in line for line in next_steps(cfg, [v], passed=True, values=calm))


def test_a_service_pinned_at_min_equals_max_is_not_saturated():
    """staging's vision (minReplicas = maxReplicas) showed SATURATED 100 %: at its maximum by construction. The
    report leaves it out unless pods were Pending; on a miss the advice lets the autoscaler add pods."""
    from preflight.summary import service_lines

    project, values = _values()
    values["services"][0].update(minReplicas=2, maxReplicas=2)
    cfg = parse_stack_config(values, project, "dev")
    metrics = {"time at maxReplicas (fraction)": Estimate(1.0, 1.0, 1.0, 5), "peak Pending pods": Estimate(0, 0, 0, 5)}
    v = _verdict("steady", {"503": {"queue-proxy": 30}}, metrics=metrics)
    v.report.update(service={"min_scale": 2, "max_scale": 2}, requests=100, status_counts={"200": 70, "503": 30})
    assert not any("SATURATED" in line for line in service_lines(v))
    text = "\n".join(next_steps(cfg, [v], passed=False, values=values))
    assert "saturated: wanted" not in text and "fixed at 2 replicas" in text and "maxReplicas=3" in text
    pending = {**metrics, "peak Pending pods": Estimate(1, 1, 1, 5)}
    assert any("fixed at 2 replicas" in line for line in service_lines(_with(v, pending)))
    v.report["service"] = {"min_scale": 1, "max_scale": 2}   # room to scale: the signal is real again
    assert any("SATURATED: wanted maxReplicas" in line for line in service_lines(v))


def _with(v: Verdict, metrics: dict) -> Verdict:
    from dataclasses import replace

    return replace(v, metrics=metrics)


def test_gateway_429s_point_at_its_rate_limit():
    project, values = _values()
    values["services"][0]["gateway"] = {"rate_limit": {"rate_per_s": 2.5, "burst": 5}}
    cfg = parse_stack_config(values, project, "dev")
    lines = next_steps(cfg, [_verdict("steady", {"429": {"gateway": 300}})], passed=False, values=values)
    text = "\n".join(lines)
    assert "gateway's rate limit (2.5 req/s)" in text and "gateway.rate_limit.rate_per_s=5" in text
    _assert_every_suggestion_loads(lines, project, values)


# --- Review rev12-diff F6: the timeout tips read the timeout the revision runs -----------------------------------
@pytest.mark.parametrize("stated", [None, 300])
def test_a_knative_service_without_timeout_gets_the_timeout_tips_of_the_rendered_300_s(stated):
    """r6: the manifest renders `timeout: 300` when it is unset (manifests/inference_service.py), but the advice
    read svc.timeout_s (None) and named no timeout for 504s; unset and 300 must advise alike."""
    from simulation.estimates import Estimate as E

    project, values = _values()
    chat = values["services"][0]
    chat.pop("timeout", None)
    if stated is not None:
        chat["timeout"] = stated
    chat["slo"] = {**chat["slo"], "p99LatencyS": 400}
    cfg = parse_stack_config(values, project, "dev")
    assert cfg.services[0].timeout_s == stated
    cut = _verdict("steady", {"504": {"queue-proxy": 40}})
    lines = next_steps(cfg, [cut], passed=False, values=values)
    text = "\n".join(lines)
    assert "the revision timeout 300 s is below its SLO's p99 latency 400 s" in text
    assert "services.chat.timeout=600" in text
    _assert_every_suggestion_loads(lines, project, values)
    chat["slo"] = {**chat["slo"], "p99LatencyS": 60}
    cfg = parse_stack_config(values, project, "dev")
    slow = _verdict("steady", {"504": {"queue-proxy": 40}},
                    metrics={"p99 latency, all requests (s)": E(90, 80, 100, 5)})
    text = "\n".join(next_steps(cfg, [slow], passed=False, values=values))
    assert "504s: requests outlive the timeout" in text and "services.chat.timeout=600" in text

"""rev12-journey's advice findings: a suggested edit `preflight check` then refuses (F2), a scale-out that cannot
arrive within the stress window (F4), the node-loss tip's status codes (F10), the 504/timeout tip on a
saturated service (F5)."""

from __future__ import annotations

import re
import shlex

from gate.rollout_capacity import rollout_problems
from gate.verdict import Check, Verdict
from manifests.admission import check_pods_can_run
from preflight.advice import next_steps
from preflight.advice_fit import accepted, fitted
from preflight.tips import Tip
from preflight.overrides import apply_sets
from simulation.estimates import Estimate
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config

MISS = Estimate(0.3, 0.25, 0.35, 5)


def _values(stack: str = "dev") -> tuple[str, dict]:
    project, values = stack_config_values(stack)
    return project, project_values(values, project)


def _sets(line: str) -> list[str]:
    return [shlex.split(s)[0] for s in re.findall(r"--set ('[^']*')", line)]


def _verdict(scenario: str, errors: dict, metrics: dict, checks: tuple | None = None, **report) -> Verdict:
    rep = {"errors_by_component": errors, "server_stats": {}, "restart_reasons": {}, "pod_restarts": 0,
           "duration_s": 600, **report}
    checks = checks or (Check("p99 latency (s)", Estimate(90, 80, 100, 5), 60), Check("error rate", MISS, 0.05))
    return Verdict("chat", checks, rep, 5, scenario, metrics=metrics)


def test_a_warm_pod_tip_comes_with_the_node_group_its_rollout_needs():
    """Pulumi.jmis.yaml: `minReplicas=2` on a 3-GPU group; `preflight check` then refused the stack (exit 2: old
    revision 2 + new revision 2 = 4 GPUs > 3). The tip now carries gpuNodeGroup.maxSize=4, and passes the check."""
    project, values = _values()
    cfg = parse_stack_config(values, project, "dev")
    assert cfg.node_group.max_size == 3 and cfg.node_group.gpus_per_node == 1
    chat = cfg.services[0]
    warm = Tip("warm", (("minReplicas", 2),))
    assert not accepted(values, cfg, chat, warm)            # the loader alone took it
    assert fitted(values, cfg, chat, warm).edits == (("minReplicas", 2), ("gpuNodeGroup.maxSize", 4))
    v = _verdict("spike", {"503": {"activator": 3}}, {"cold starts": Estimate(2, 1, 3, 5),
                                                      "mean ready replicas": Estimate(1.6, 1.2, 2.0, 5)})
    lines = next_steps(cfg, [v], passed=False, values=values)
    [line] = [ln for ln in lines if "minReplicas=2" in ln]
    assert "--set 'gpuNodeGroup.maxSize=4'" in line and "rollout" in line
    for ln in lines[1:]:
        if _sets(ln):
            edited = parse_stack_config(apply_sets(values, _sets(ln)), project, "dev")
            check_pods_can_run(edited)
            assert rollout_problems(edited) == [], ln


def test_check_json_carries_the_next_steps_the_text_prints():
    """F7: `preflight check --json` left out the what-if commands the text ends with."""
    from preflight.check import StackCheck

    project, values = _values()
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("spike", {"503": {"activator": 3}}, {"cold starts": Estimate(2, 1, 3, 5)})
    result = StackCheck("dev", cfg=cfg, verdicts=[v])
    out = result.to_dict()
    assert not out["passed"] and out["next"] == next_steps(cfg, [v], passed=False)
    assert any("python -m preflight whatif --stack dev --set" in line for line in out["next"])
    assert StackCheck("dev", cfg=cfg).to_dict()["next"][0].startswith("next: deploy with `pulumi stack select dev")


def test_the_node_loss_tip_names_the_errors_the_run_saw():
    """F10: the tip said "502s/503s from the lost node" when the run's errors were mostly the activator's 504s
    (requests waiting out a long cold start on a new node)."""
    project, values = _values()
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("nodeLoss", {"502": {"queue-proxy": 2}, "504": {"activator": 40}}, {})
    [line] = [ln for ln in next_steps(cfg, [v], passed=False, values=values) if "lost node" in ln]
    assert "504 × 40 from the activator, 502 × 2 from the queue-proxy" in line and "503" not in line
    assert "services.chat.minReplicas=1" in line


def _fixed_spike(values: dict, burst: dict | None = None) -> tuple:
    """dev's chat held at 1 pod (min = max), missing its p99 latency in the spike scenario."""
    chat = values["services"][0]
    chat.update(minReplicas=1, maxReplicas=1)
    if burst:
        chat["stress"]["spike"].update(burst)
    v = _verdict("spike", {}, {"time at maxReplicas (fraction)": Estimate(1.0, 1.0, 1.0, 5)},
                 service={"min_scale": 1, "max_scale": 1})
    return v


def test_no_scale_out_is_offered_that_a_new_pod_cannot_deliver_within_the_spike():
    """F4 (Pulumi.j70b.yaml): a fixed-size service missing its SLO in a 120-s spike was told maxReplicas=2, but a
    new pod's cold start (node, image pull, model load: minutes) ends after the spike, so the what-if changed
    nothing and cost more. It is told to keep the pods warm instead, with the nodes they need."""
    project, values = _values()
    v = _fixed_spike(values)
    cfg = parse_stack_config(values, project, "dev")
    lines = next_steps(cfg, [v], passed=False, values=values)
    assert not any(ln.endswith("--set 'services.chat.maxReplicas=2'") for ln in lines)   # the old tip
    [line] = [ln for ln in lines if "median cold start" in ln]
    assert "outlasts the 120-s spike" in line
    for s in ("services.chat.minReplicas=2", "services.chat.maxReplicas=2", "gpuNodeGroup.minSize=2",
              "gpuNodeGroup.desiredSize=2"):
        assert f"--set '{s}'" in line, s
    for ln in lines[1:]:
        if _sets(ln):
            edited = parse_stack_config(apply_sets(values, _sets(ln)), project, "dev")
            check_pods_can_run(edited)
            assert rollout_problems(edited) == [], ln


def test_a_scale_out_that_arrives_within_a_long_spike_is_still_offered():
    project, values = _values()
    v = _fixed_spike(values, {"atS": 60, "durationS": 500})
    cfg = parse_stack_config(values, project, "dev")
    lines = next_steps(cfg, [v], passed=False, values=values)
    assert any(ln.endswith("--set 'services.chat.maxReplicas=2'") for ln in lines)
    assert not any("median cold start" in ln for ln in lines)


SATURATED = {"time at maxReplicas (fraction)": Estimate(0.99, 0.98, 1.0, 5)}


def test_a_timeout_below_the_server_time_is_named_first_even_when_saturated():
    """F5 (Pulumi.jabs.yaml, `timeout: 1` under an SLO of 5 s): 504s and 1,525 answers cut mid-stream
    (200-truncated) were advised containerConcurrency and maxReplicas only; the timeout tip was dropped because
    the service was saturated."""
    project, values = _values()
    values["services"][0]["timeout"] = 1
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("steady", {"504": {"queue-proxy": 236}}, {**SATURATED,
                 "p99 latency, all requests (s)": Estimate(1.0, 1.0, 1.0, 5)},
                 status_counts={"200": 15, "200-truncated": 1525, "504": 236})
    lines = next_steps(cfg, [v], passed=False, values=values)
    assert "236 504s and 1525 answers cut off mid-stream (200-truncated)" in lines[1]
    assert lines[1].endswith("--set 'services.chat.timeout=60'")       # up to the SLO's p99: policy isvc-timeout
    assert any("maxReplicas" in ln for ln in lines[2:])                # the capacity tips follow
    values["services"][0]["timeout"] = 120                              # above the server's time: no such tip
    cfg = parse_stack_config(values, project, "dev")
    v.metrics["p99 latency, all requests (s)"] = Estimate(30.0, 28.0, 32.0, 5)
    assert not any("timeout=" in ln for ln in next_steps(cfg, [v], passed=False, values=values))


def test_a_service_whose_pods_never_got_a_gpu_is_told_so_not_to_batch_or_add_replicas():
    """F5: on 2 GPUs shared by 8 services, six never had a Ready pod (every request a 504 from the activator), and
    each was told containerConcurrency and maxReplicas, as the services that ran."""
    project, values = _values()
    values["services"][0]["timeout"] = 1
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("steady", {"504": {"activator": 1829}}, {**SATURATED,
                 "mean ready replicas": Estimate(0, 0, 0, 5), "peak Pending pods": Estimate(2, 2, 2, 5)},
                 status_counts={"504": 1829})
    lines = next_steps(cfg, [v], passed=False, values=values)
    assert "no pod of chat was ever Ready" in lines[1] and "504 × 1829 from the activator" in lines[1]
    assert lines[1].endswith("--set 'gpuNodeGroup.maxSize=4'")
    assert not any("containerConcurrency" in ln or "maxReplicas=" in ln or "timeout=" in ln for ln in lines)


def test_a_tip_needing_several_more_nodes_is_paired_with_all_of_them():
    """Review 12 (mutation testing), F4: minReplicas 3 on dev's 3-GPU group: the next rollout holds 3 old + 3 new
    pods, so the tip needs maxSize 6, three more nodes, not the first size tried."""
    project, values = _values()
    cfg = parse_stack_config(values, project, "dev")
    chat = cfg.services[0]
    tip = Tip("warm", (("minReplicas", 3), ("maxReplicas", max(3, chat.max_replicas))))
    assert fitted(values, cfg, chat, tip).edits[-1] == ("gpuNodeGroup.maxSize", 6)

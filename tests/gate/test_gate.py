"""The SLO gate: every service simulated exactly as the stack would deploy it, before anything is registered."""

from __future__ import annotations

import pulumi
import pytest

from manifests.inference_service import inference_service
import gate
from validation.errors import InputError
from offline import run_program
from simulation import load_scenario
from simulation.replicate import clear_cache
from stackconfig.load import ROOT, load_stack, project_values, stack_config_values
from stackconfig.schema import parse_stack_config

P = "kserve-preflight"


def _chat(c):
    return c[f"{P}:services"][0]


def _config(stack: str, edit=None):
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    if edit:
        edit(values)
    return parse_stack_config(values, project, stack)


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_shipped_stacks_meet_their_slos(stack):
    verdicts = gate.check_stack(load_stack(stack))
    steady = [v.service for v in verdicts if v.scenario == "steady"]
    assert steady == [s.name for s in load_stack(stack).services]
    assert {"spike", "rollout", "nodeLoss"} <= {v.scenario for v in verdicts}
    assert all(v.passed for v in verdicts), [m for v in verdicts for m in v.misses()]


def test_the_simulation_reads_the_manifest_the_component_deploys():
    cfg = load_stack("prod")
    svc = cfg.services[0]
    scenario = gate.scenario_for(cfg, svc)
    assert scenario["inferenceService"] == inference_service(cfg, svc)
    parsed = load_scenario(scenario, base_dir=ROOT)
    # Engine, caps and memory settings come from the manifest's annotation, flags, not a second copy.
    assert parsed.server.kind == "vllm"
    assert parsed.server.spec.max_num_seqs == svc.caps.max_batch_size
    assert parsed.server.spec.max_model_len == svc.caps.max_input_tokens + svc.caps.max_new_tokens
    assert parsed.server.spec.gpu_memory_utilization == svc.gpu_memory_utilization
    # vLLM has no separate input cap (its 400 is prompt + max_tokens above --max-model-len): none is read.
    assert parsed.server.spec.max_input_tokens is None and parsed.server.spec.max_new_tokens is None
    assert parsed.serving.container_concurrency == svc.container_concurrency
    assert parsed.serving.kpa.min_scale == svc.min_replicas and parsed.serving.kpa.max_scale == svc.max_replicas


def test_cluster_profile_whole_node_group_or_less_the_others_minimum():
    cfg = load_stack("prod")  # 7 nodes × 4 L40S; code holds 1 GPU at minReplicas, chat 4
    chat, code = cfg.services
    assert gate.cluster_profile(cfg)["max_nodes"] == 7   # the fleet simulation: every service on the group
    assert gate.cluster_profile(cfg, chat)["max_nodes"] == (28 - 1) // 4   # one service's standalone scenario
    assert gate.cluster_profile(cfg, code)["max_nodes"] == (28 - 4) // 4
    assert gate.cluster_profile(cfg, chat)["model_cache_hit_ratio"] == 1.0


def test_a_service_that_misses_its_slo_stops_the_program_before_any_resource(registered):
    def undersized(c):  # one pod at most for ~11 req/s of chat traffic
        _chat(c).update(minReplicas=1, maxReplicas=1)
        _chat(c)["annotations"].pop("autoscaling.knative.dev/initial-scale")

    with pytest.raises(pulumi.RunError) as err:
        run_program("prod", edit=undersized)
    text = str(err.value)
    assert text.startswith("SLO gate: the simulation predicts that this configuration misses its SLO")
    assert "chat: p99 latency (s)" in text and "> SLO 60" in text
    assert "python -m preflight check --stack prod` for the full report" in text
    assert registered == []  # not even the node group or the Namespace (issue 9: a moved gate went unnoticed)

    # Control: the same config with the gate's verdict as a warning registers resources, and the probe sees them.
    def warned(c):
        undersized(c)
        c[f"{P}:gate"] = {**c.get(f"{P}:gate", {}), "enforce": False}

    run_program("prod", edit=warned)
    assert "gpu-ng" in registered and len(registered) > 10


def test_gate_enforce_false_warns_and_deploys():
    def undersized(c):
        _chat(c).update(minReplicas=1, maxReplicas=1)
        _chat(c)["annotations"].pop("autoscaling.knative.dev/initial-scale")
        c[f"{P}:gate"] = {"enforce": False}

    assert run_program("prod", edit=undersized).of_type("kubernetes:serving.kserve.io/v1beta1:InferenceService")


def test_gate_disabled_simulates_nothing(monkeypatch):
    import program  # patch the name program.py calls: it imported start_check from gate

    calls = []
    monkeypatch.setattr(program, "start_check", lambda cfg, **kw: calls.append(cfg.stack) or (lambda: []))
    run_program("dev", edit=lambda c: c.__setitem__(f"{P}:gate", {"enabled": False}))
    assert calls == []
    run_program("dev")  # the control: the same patch sees an enabled gate
    assert calls == ["dev"]


def test_verdicts_are_reproducible_and_seeded():
    cfg = load_stack("staging")
    first = gate.check_service(cfg, cfg.services[0])
    clear_cache()
    again = gate.check_service(cfg, cfg.services[0])
    assert first.report == again.report and first.passed == again.passed
    other = _config("staging", lambda v: v.__setitem__("gate", {"seed": 7}))
    assert gate.check_service(other, other.services[0]).report != first.report


def test_a_bad_workload_is_a_config_error_with_its_key_path():
    with pytest.raises(InputError) as err:
        _config("dev", lambda v: v["services"][0]["workload"].update(kind="possion"))
    assert "kserve-preflight:services[0].workload.kind: got 'possion'" in str(err.value)
    with pytest.raises(pulumi.RunError, match=r"services\[0\]\.workload\.rate: got -1"):
        run_program("dev", edit=lambda c: _chat(c)["workload"].update(rate=-1))


def test_services_without_workload_or_slo_are_not_simulated():
    cfg = _config("dev", lambda v: v["services"][0].pop("slo"))
    assert gate.check_stack(cfg) == []


def test_the_gate_sees_the_oom_spiral_and_the_safe_preset_does_not_crash():
    """A naive PyTorch server, CC 4, no input cap: CUDA OOM crash loops fail the gate; the guides' caps and CC 1
    remove the crashes (a naive server stays too slow for this SLO either way: that is the gate's other finding).
    The worker dies on the OOM here (engineProfile oom: process, the guides' story); KServe's own Python server
    answers 500 and serves on (the default), which the last part checks: no restarts, 500s instead of 502s. The
    server runs a generate() per request at once (engineProfile generate: concurrent, the guides' custom server)."""
    def naive(v, safe, oom="process"):
        chat = v["services"][0]
        chat["runtime"]["engine"] = "naive"
        chat["engineProfile"] = {"oom": oom, "generate": "concurrent", "eagerAttention": True, "allLogits": True}
        chat.update(containerConcurrency=1 if safe else 4, scaleTarget=1 if safe else 4, minReplicas=1)
        # huggingfaceserver caps prompt + max_tokens (--max_length): a 4096-token context in all
        chat["limits"] = {"maxInputTokens": 3072, "maxNewTokens": 1024} if safe else {}
        chat["workload"].update(rate=1.0)
        v["gpuNodeGroup"]["instanceTypes"] = ["g5.xlarge"]  # 24 GB A10G
        v["gate"] = {"durationS": 600}

    spiral = gate.check_stack(_config("dev", lambda v: naive(v, safe=False)))[0]
    assert not spiral.passed
    assert spiral.report["restart_reasons"] == {"CUDA out of memory": spiral.report["pod_restarts"]}
    assert spiral.report["status_counts"].get("502", 0) > 0  # in-flight requests die with the process
    safe = gate.check_stack(_config("dev", lambda v: naive(v, safe=True)))[0]
    assert safe.report["pod_restarts"] == 0
    kserve = gate.check_stack(_config("dev", lambda v: naive(v, safe=False, oom="request")))[0]
    assert kserve.report["pod_restarts"] == 0 and kserve.report["status_counts"].get("500", 0) > 0


def test_user_catalog_entries_reach_the_simulation():
    def custom(v):
        v["catalog"] = {"models": {"my-3b": {"paramsB": 3.2, "layers": 28, "kvHeads": 8, "headDim": 128,
                                             "maxContext": 8192, "hiddenSize": 3072, "vocabSize": 128256}}}
        v["services"][0]["model"] = {"name": "my-3b", "storageUri": "s3://models/my-3b/"}
        v["modelCache"]["serviceAccountName"] = "model-cache-reader"  # the bucket's IRSA account

    cfg = _config("dev", custom)
    scenario = gate.scenario_for(cfg, cfg.services[0])
    assert scenario["server"]["catalog"]["models"]["my-3b"]["layers"] == 28
    parsed = load_scenario(scenario, base_dir=ROOT)
    assert parsed.server.spec.profile.model.name == "my-3b"
    assert parsed.server.spec.profile.model.kv_bytes_per_token == 2 * 28 * 8 * 128 * 2
    verdict = gate.check_service(cfg, cfg.services[0])
    assert verdict.report["status_counts"].get("200", 0) > 0


def test_the_program_imports_the_providers_only_to_register_resources():
    """`pulumi up` forks the gate's workers, then imports pulumi-aws/-kubernetes while they simulate."""
    import subprocess
    import sys

    probe = ("import sys, program; print(sorted(m for m in ('pulumi_aws', 'pulumi_kubernetes', 'components') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

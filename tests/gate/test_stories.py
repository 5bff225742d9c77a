"""The field guides' four failure stories (/work/shared/guides/), each as a gate run that fails on the bad setting
and passes on the guide's fix. Every story starts from the dev stack and changes only what the story is about."""

from __future__ import annotations

import copy

import gate
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config


# engineProfile of the guides' naive server: a generate() per request at once, eager attention, all logits.
CONCURRENT_SERVER = {"generate": "concurrent", "eagerAttention": True, "allLogits": True}


def _gate(edit):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    edit(values, values["services"][0])
    return gate.check_stack(parse_stack_config(values, project, "dev"))


def _failed(verdicts) -> dict:
    return {(v.service, v.scenario): [c.name for c in v.checks if not c.ok] for v in verdicts if not v.passed}


def _one(verdicts, service: str, scenario: str):
    return next(v for v in verdicts if v.service == service and v.scenario == scenario)


def test_scale_to_zero_with_a_slow_model_load_fails_and_min_replicas_1_fixes_it():
    """503 guide §3-1: minReplicas 0 → traffic arriving after idle waits for node + image + model load."""
    def story(min_replicas):
        def edit(v, chat):
            chat["minReplicas"] = min_replicas
            chat["stress"].pop("scaleFromZero")   # dev's own stack accepts this; the story does not
        return _gate(edit)

    bad = story(0)
    assert list(_failed(bad)) == [("chat", "scaleFromZero")]
    cold = _one(bad, "chat", "scaleFromZero").report
    assert cold["cold_start_s"]["max"] > 240            # node, image pull, load, engine init
    assert cold["latency_s"]["p99"] > 4 * 60            # the first requests wait for it …
    assert cold["status_counts"].get("504", 0) > 0      # … or time out
    fixed = story(1)
    assert _failed(fixed) == {}
    assert "scaleFromZero" not in {v.scenario for v in fixed}


def test_cc_too_high_on_a_naive_server_spirals_into_oom_and_cc_1_with_caps_fixes_it():
    """429/OOM guide §2 and §5: concurrency × per-request activation memory outgrows the GPU (24 GB A10G); the
    worker process dies on the CUDA OOM (engineProfile oom: process, the guide's story). The guide's server runs a
    generate() per request at once (engineProfile generate: concurrent, with eager attention and every prompt
    position's logits); KServe's huggingfaceserver as released runs one at a time and does not spiral (last part)."""
    def story(safe, server=CONCURRENT_SERVER):
        def edit(v, chat):
            chat["runtime"]["engine"] = "naive"
            chat["engineProfile"] = {"oom": "process", **server}
            chat.update(containerConcurrency=1 if safe else 4, scaleTarget=1 if safe else 4, minReplicas=2,
                        maxReplicas=4)
            # huggingfaceserver caps prompt + max_tokens (--max_length): a 4096-token context in all
            chat["limits"] = {"maxInputTokens": 3072, "maxNewTokens": 1024} if safe else {}
            chat["workload"].update(rate=0.2)
            chat.pop("stress")
            chat["slo"] = {"p99LatencyS": 120, "maxErrorRate": 0.01, "max503Rate": 0.01}
            v["gpuNodeGroup"].update(instanceTypes=["g5.xlarge"], maxSize=10)
        return _gate(edit)

    bad = story(False)
    assert ("chat", "steady") in _failed(bad)
    steady = _one(bad, "chat", "steady").report
    assert steady["restart_reasons"] == {"CUDA out of memory": steady["pod_restarts"]} and steady["pod_restarts"] > 0
    assert steady["status_counts"].get("502", 0) > 0    # in-flight requests die with the process
    fixed = story(True)
    assert _failed(fixed) == {}
    assert all(v.report["pod_restarts"] == 0 for v in fixed if v.scenario != "nodeLoss")
    serial = _one(story(False, server={}), "chat", "steady").report  # huggingfaceserver: queues, never OOMs
    assert serial["pod_restarts"] == 0 and "502" not in serial["status_counts"]


def test_max_replicas_beyond_the_shared_node_group_pends_under_a_spike_and_a_fitting_group_fixes_it():
    """503 guide §3-1 ("maxReplicas must match the GPU nodes"): two services of maxReplicas 3 on 4 GPUs; a spike
    on both leaves pods Pending and the queue-proxies overflow (503). The fix: a node group that holds both."""
    def story(nodes):
        def edit(v, chat):
            chat.pop("stress")
            chat.update(minReplicas=1, maxReplicas=3, containerConcurrency=4, scaleTarget=3)
            chat["annotations"]["autoscaling.knative.dev/target-burst-capacity"] = "0"
            chat["workload"].update(rate=0.8)
            chat["slo"] = {"p99LatencyS": 120, "maxErrorRate": 0.02, "max503Rate": 0.01}
            chat["stress"] = {"rollout": False, "nodeLoss": False}
            code = copy.deepcopy(chat)
            code["name"] = "code"
            v["services"].append(code)
            v["gpuNodeGroup"].update(minSize=nodes, maxSize=nodes, desiredSize=nodes)
        return _gate(edit)

    bad = story(4)
    assert set(_failed(bad)) == {("chat", "spike"), ("code", "spike")}
    for name in ("chat", "code"):
        spike = _one(bad, name, "spike").report
        assert spike["pending_pods"]["max"] > 0
        assert spike["errors_by_component"]["503"] == {"queue-proxy": spike["status_counts"]["503"]}
    fixed = story(6)
    assert _failed(fixed) == {}
    assert all(v.report["pending_pods"]["max"] == 0 for v in fixed)


def test_a_short_window_flaps_under_waves_of_traffic_and_scale_down_delay_fixes_it():
    """503 guide §3-3 (scale-down-delay 10m): a 6 s window with no delay follows every trough of a 4-minute
    traffic wave down, so every crest waits for new pods' model load (~40 s) — and pays a cold start each time."""
    def story(delay):
        def edit(v, chat):
            chat.pop("stress")
            chat.update(minReplicas=1, maxReplicas=4, containerConcurrency=4, scaleTarget=2)
            chat["annotations"] = {"autoscaling.knative.dev/window": "6s",
                                   "autoscaling.knative.dev/target-burst-capacity": "0"}
            if delay:
                chat["annotations"]["autoscaling.knative.dev/scale-down-delay"] = delay
            chat["workload"].update(kind="diurnal", rate=0.6, period_s=240, amplitude=1.0)
            # p99 TTFT 36 s (the p99 of all runs' values pooled): the fix's is ~32 [26, 39] s, undecided with its
            # estimate meeting it; the flapping one's is ~44 [38, 51] s, a crest waiting for a model load
            chat["slo"] = {"p99LatencyS": 60, "p99TtftS": 36, "maxErrorRate": 0.02, "max503Rate": 0.01}
            chat["stress"] = {"rollout": False, "nodeLoss": False}
            v["gpuNodeGroup"].update(minSize=4, maxSize=4, desiredSize=4)
            # The story is about flapping: every crest waits the same model load (~40 s), as with the fixed priors
            # it was written against (the defaults now vary: engine init U[10, 60] s, a lognormal load)
            v["coldStart"] = {"nodeProvisionS": 120, "imagePullMBps": 60, "downloadGBps": 0.5, "loadGBps": 2.0,
                              "engineInitS": 30}
        return _gate(edit)

    bad = story(None)
    assert _failed(bad) == {("chat", "steady"): ["p99 time to first token (s)"]}
    fixed = story("10m")
    assert _failed(fixed) == {}
    flapping, calm = _one(bad, "chat", "steady").report, _one(fixed, "chat", "steady").report
    assert flapping["cold_starts"] >= 3 * calm["cold_starts"]
    assert flapping["pods_created"] >= 3 * max(1, calm["pods_created"])

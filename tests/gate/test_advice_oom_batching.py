"""rev11-guides F2–F4: CUDA OOM answered as 500 is named and gets the guides' caps (not more replicas first); a
continuous-batching server held back by a small containerConcurrency gets a containerConcurrency tip; a service
the SLO gate did not simulate is named on the verdict line. Every printed `--set` list goes through the loader."""

from __future__ import annotations

import io

from rich.console import Console

from gate.verdict import Check, Verdict
from preflight import check as cli
from preflight.advice import batch_capacity, next_steps
from preflight.advice_crash import oom_seen
from preflight.summary import service_lines
from simulation.estimates import Estimate
from simulation.gpu.memory import naive_base_bytes, vision_activation_bytes
from stackconfig.schema import parse_stack_config
from tests.gate.test_advice import MISS, _assert_every_suggestion_loads, _sets, _values, _verdict

# replication 0 of the reviewer's g-vision (staging's Triton vision, maxBatchSize 256, maxImagePixels 8,000,000,
# images of median 4 MP): every OOM failed its batch with 500 and the server kept serving, no restart
VISION_OOM = {"completed": 9248, "oom_crashes": 0, "oom_events": 1366, "oom_request_failures": 9048, "rejected_400": 0}
PINNED = {"time at maxReplicas (fraction)": Estimate(1.0, 1.0, 1.0, 5), "peak Pending pods": Estimate(0, 0, 0, 5)}


def _vision_values(**limits) -> tuple[str, dict]:
    project, values = _values("staging")
    values["services"] = [s for s in values["services"] if s["name"] == "vision"]
    lim = values["services"][0]["limits"]
    for key, value in limits.items():
        if value is None:
            lim.pop(key, None)
        else:
            lim[key] = value
    return project, values


def _vision_oom_verdict() -> Verdict:
    v = _verdict("steady", {"500": {"server": 9048}}, stats=dict(VISION_OOM), metrics=PINNED, service="vision")
    v.report.update(service={"min_replicas": 1, "max_replicas": 1}, requests=18296,
                    status_counts={"200": 9248, "500": 9048})
    return v


def test_oom_answered_500_is_seen_and_capped_before_more_replicas():
    """g-vision: 49 % errors, all 500s from CUDA OOM; the old advice said `maxReplicas=2` (it looked for OOM only
    behind 502s). Now the first tip is a batch cap that fits in GPU memory at the pixel cap."""
    project, values = _vision_values(maxBatchSize=256, maxImagePixels=8_000_000)
    cfg = parse_stack_config(values, project, "staging")
    v = _vision_oom_verdict()
    assert oom_seen(v)
    lines = next_steps(cfg, [v], passed=False, values=values)
    first = lines[1]
    assert "500s from CUDA OOM (1366 OOM events failed 9048 requests" in first and "maxReplicas" not in first
    [edit] = _sets(first)
    assert edit.startswith("services.vision.limits.maxBatchSize=")
    batch = int(edit.split("=")[1])
    # the proposed batch of images at the cap fits in one GPU's memory, one more does not
    svc, gpu = cfg.services[0], cfg.node_group.gpu
    need = lambda n: naive_base_bytes(svc.model) + vision_activation_bytes(svc.model, 8_000_000, n)  # noqa: E731
    assert 1 <= batch < 256 and need(batch) <= gpu.cuda_total_bytes < need(batch + 1)
    assert any("maxReplicas=2" in line for line in lines[2:])   # still offered, after the OOM fix
    _assert_every_suggestion_loads(lines, project, values, "staging")


def test_an_image_model_without_a_pixel_cap_gets_one_that_fits_alone():
    project, values = _vision_values(maxImagePixels=None)
    cfg = parse_stack_config(values, project, "staging")
    lines = next_steps(cfg, [_vision_oom_verdict()], passed=False, values=values)
    sets = [s for line in lines for s in _sets(line)]
    [cap] = [int(s.split("=")[1]) for s in sets if s.startswith("services.vision.limits.maxImagePixels=")]
    svc, gpu = cfg.services[0], cfg.node_group.gpu
    assert naive_base_bytes(svc.model) + vision_activation_bytes(svc.model, cap) <= gpu.cuda_total_bytes
    assert not any("maxInputTokens" in s for s in sets)   # tokens mean nothing to an image model
    _assert_every_suggestion_loads(lines, project, values, "staging")


def test_llm_oom_answered_500_in_knative_mode_gets_one_request_per_pod_and_an_input_cap():
    """A naive-style `oom: request` on dev's chat: 500s, no 502, no restart. The old advice had no OOM tip at all."""
    project, values = _values()
    values["services"][0]["limits"].pop("maxInputTokens")
    cfg = parse_stack_config(values, project, "dev")
    v = _verdict("steady", {"500": {"server": 120}}, stats={"oom_events": 30, "oom_request_failures": 120})
    lines = next_steps(cfg, [v], passed=False, values=values)
    text = "\n".join(lines)
    assert "500s from CUDA OOM (30 OOM events failed 120 requests" in lines[1]
    assert "services.chat.containerConcurrency=1" in text and "services.chat.limits.maxInputTokens=4096" in text
    assert "services.chat.limits.maxBatchSize=2" in text   # half of the 4 the queue-proxy lets into a pod
    _assert_every_suggestion_loads(lines, project, values)


def test_the_summary_names_cuda_oom_whatever_the_status_code():
    v = _vision_oom_verdict()
    text = "\n".join(service_lines(v))
    assert "CUDA OOM (replication 0): 1366 OOM events; 9048 requests failed with 500" in text
    assert "crashed" not in text
    quiet = _verdict("steady", {}, stats={"oom_events": 0, "oom_request_failures": 0, "oom_crashes": 0})
    quiet.report.update(requests=10, status_counts={"200": 10})
    assert not any("CUDA OOM" in line for line in service_lines(quiet))


def _preset(values: dict, cc: int = 1, target: int = 1) -> dict:
    """The guides' preset on prod's chat (vLLM, maxBatchSize 64): containerConcurrency 1, target 1."""
    values["services"] = values["services"][:1]
    values["services"][0].update(containerConcurrency=cc, scaleTarget=target)
    return values


def _saturated(stats: dict | None = None) -> Verdict:
    """g-preset's steady run: 98 % errors (truncated streams and 504s at the activator), at maxReplicas 99.5 %."""
    metrics = {"time at maxReplicas (fraction)": Estimate(0.995, 0.995, 0.995, 20),
               "peak Pending pods": Estimate(0, 0, 0, 20)}
    checks = (Check("p99 latency (s)", Estimate(120, 119, 121, 20), 60), Check("error rate", MISS, 0.005),
              Check("503 rate", Estimate(0, 0, 0.001, 20), 0.001))
    report = {"errors_by_component": {"200-truncated": {"activator": 9611}, "504": {"activator": 78}},
              "server_stats": stats or {"oom_events": 0, "oom_crashes": 0}, "restart_reasons": {},
              "service": {"min_scale": 1, "max_scale": 8}, "duration_s": 900}
    return Verdict("chat", checks, report, 20, "steady", metrics=metrics)


def test_vllm_held_back_by_containerconcurrency_gets_it_raised_before_more_replicas():
    """g-preset: CC 1 / target 1 on vLLM fails at 98 %; the old advice only raised maxReplicas (→ 96 %). CC 16 /
    target 12 passes its error rate: the first tip raises containerConcurrency toward the batch cap."""
    project, values = _values("prod")
    values = _preset(values)
    cfg = parse_stack_config(values, project, "prod")
    lines = next_steps(cfg, [_saturated()], passed=False, values=values)
    assert "continuous batching" in lines[1] and "batches up to 64" in lines[1]
    assert _sets(lines[1]) == ["services.chat.containerConcurrency=16", "services.chat.scaleTarget=12"]
    assert any("maxReplicas=" in line for line in lines[2:])
    _assert_every_suggestion_loads(lines, project, values, "prod")


def test_no_containerconcurrency_raise_after_an_oom_near_the_batch_cap_or_on_a_one_at_a_time_server():
    project, values = _values("prod")
    cfg = parse_stack_config(_preset(values), project, "prod")
    oom = next_steps(cfg, [_saturated({"oom_events": 3, "oom_request_failures": 9})], passed=False, values=values)
    assert not any("continuous batching" in line for line in oom)
    project, tuned = _values("prod")   # prod's own 16 of 64: a quarter of the cap is not "well below"
    cfg = parse_stack_config(_preset(tuned, 16, 12), project, "prod")
    assert not any("continuous batching" in line for line in next_steps(cfg, [_saturated()], False, values=tuned))
    project, naive = _values("prod")
    naive = _preset(naive)
    naive["services"][0]["runtime"] = {"engine": "naive", "modelFormat": "huggingface"}
    naive["services"][0].pop("gpuMemoryUtilization", None)
    cfg = parse_stack_config(naive, project, "prod")
    assert not any("continuous batching" in line for line in next_steps(cfg, [_saturated()], False, values=naive))


def test_tgi_containerconcurrency_raise_stays_within_its_routers_admission_limit():
    project, values = _values()
    chat = values["services"][0]
    chat["runtime"]["engine"] = "tgi"
    chat.update(containerConcurrency=1, scaleTarget=1)
    chat["limits"] = {**chat["limits"], "maxBatchSize": 64, "maxConcurrentRequests": 8}
    cfg = parse_stack_config(values, project, "dev")
    lines = next_steps(cfg, [_saturated()], passed=False, values=values)
    [tip] = [line for line in lines if "continuous batching" in line]
    [cc, target] = _sets(tip)
    assert cc == "services.chat.containerConcurrency=2" and target == "services.chat.scaleTarget=1"
    _assert_every_suggestion_loads(lines, project, values)


def _print(result: cli.StackCheck) -> str:
    buf = io.StringIO()
    cli.print_result(result, Console(file=buf, width=300))
    return buf.getvalue()


def test_the_pass_line_names_the_services_the_gate_did_not_simulate():
    """g-noslo: dev with chat's workload and SLO removed ended in a bare `pass stack`."""
    project, values = _values()
    for key in ("workload", "slo", "stress"):
        values["services"][0].pop(key, None)
    cfg = parse_stack_config(values, project, "dev")
    text = _print(cli.StackCheck("dev", resources=12, cfg=cfg))
    assert "pass stack dev (SLO gate: chat not simulated: no workload or SLO)" in text
    project, values = _values()
    full = parse_stack_config(values, project, "dev")
    assert "pass stack dev\n" in _print(cli.StackCheck("dev", resources=12, cfg=full))
    project, values = _values()
    values["gate"] = {**values.get("gate", {}), "enabled": False}
    off = parse_stack_config(values, project, "dev")
    assert "pass stack dev (SLO gate: off, gate.enabled is false: no service simulated)" in _print(
        cli.StackCheck("dev", resources=12, cfg=off))


def _batch_cap_in_args(values: dict, engine: str, args: list[str], cc: int) -> dict:
    """prod's chat without limits.maxBatchSize, its batch cap given as the engine's own flag instead."""
    values = _preset(values, cc, cc)
    chat = values["services"][0]
    chat["limits"] = {k: v for k, v in chat["limits"].items() if k != "maxBatchSize"}
    chat["runtime"] = {**chat["runtime"], "engine": engine, "args": args}
    return values


def test_a_batch_cap_given_as_a_runtime_flag_bounds_the_containerconcurrency_raise():
    """Review 11 (diff), F8: `--max-num-seqs 8` in runtime.args (read by the simulation through
    engine_flags.engine_settings) was ignored: batch_capacity returned vLLM's default and the tip proposed
    containerConcurrency 64 for a server that batches 8. With CC 2, 4 × CC ≥ 8: no tip."""
    for engine, args in (("vllm", ["--max-num-seqs", "8"]), ("vllm", ["--max-num-seqs=8"]),
                         ("tgi", ["--max-batch-size", "8"])):
        project, values = _values("prod")
        values = _batch_cap_in_args(values, engine, args, 2)
        cfg = parse_stack_config(values, project, "prod")
        assert batch_capacity(cfg, cfg.services[0]) == 8, (engine, args)
        lines = next_steps(cfg, [_saturated()], passed=False, values=values)
        assert not any("continuous batching" in line for line in lines), (engine, args, lines)
    project, values = _values("prod")          # control: CC 1 is still held back, raised no further than the flag
    values = _batch_cap_in_args(values, "vllm", ["--max-num-seqs", "8"], 1)
    cfg = parse_stack_config(values, project, "prod")
    lines = next_steps(cfg, [_saturated()], passed=False, values=values)
    [tip] = [line for line in lines if "continuous batching" in line]
    assert "batches up to 8" in tip and "services.chat.containerConcurrency=2" in _sets(tip)


def test_the_summary_and_the_advice_count_ooms_with_one_function(monkeypatch):
    """Review 11 (diff), F9: preflight/summary.py recomputed advice.oom_counts line for line; one helper (in
    summary, which advice imports: no cycle), so the summary line and the tip cannot drift apart."""
    import preflight.advice_crash as advice
    import preflight.summary as summary

    assert advice.oom_counts is summary.oom_counts
    v = _verdict("steady", {}, stats={"oom_events": 0, "oom_request_failures": 0, "oom_crashes": 0})
    v.report.update(requests=10, status_counts={"200": 10})
    monkeypatch.setattr(summary, "oom_counts", lambda report: (7, 3, 0))
    assert any("CUDA OOM (replication 0): 7 OOM events; 3 requests failed" in line for line in service_lines(v))


def test_images_and_pixels_that_fit_share_one_free_memory_figure(monkeypatch):
    """Review 11 (diff), F9: both computed cuda_total_bytes - naive_base_bytes(model) themselves."""
    import preflight.advice_crash as advice

    project, values = _vision_values()
    cfg = parse_stack_config(values, project, "dev")
    svc = next(s for s in cfg.services if s.model.kind == "vision")
    pixels = advice._pixels_that_fit(cfg, svc)
    assert pixels > 0 and advice._images_that_fit(cfg, svc, pixels) >= 1
    monkeypatch.setattr(advice, "_free_beside_weights", lambda cfg, svc: 0)
    assert advice._pixels_that_fit(cfg, svc) == 0 and advice._images_that_fit(cfg, svc, pixels) == 0


def test_the_batch_capacity_follows_the_engine_vllm_use_v1_selects():
    """`VLLM_USE_V1=0` in runtime.env runs the V0 engine in the simulation (engine_flags reads it), whose default
    max_num_seqs on an H100 is 256, not V1's 1,024: the advice read only engineProfile.scheduler and said 1,024."""
    from runtime_stack import chat_stack, with_service

    base = chat_stack()
    base["gpuNodeGroup"] = {"instanceTypes": ["p5.48xlarge"]}       # 8 × H100 (80 GiB: V1 batches 1,024)
    runtime = {"engine": "vllm", "modelFormat": "huggingface", "image": "kserve/huggingfaceserver:v0.15.2-gpu"}
    caps = {}
    for env in ({}, {"VLLM_USE_V1": "0"}, {"VLLM_USE_V1": "1"}):
        cfg = parse_stack_config(with_service(base, {**runtime, "env": env}), "p", "dev")
        caps[env.get("VLLM_USE_V1")] = batch_capacity(cfg, cfg.services[0])
    assert caps == {None: 1024, "0": 256, "1": 1024}

"""Triton's `runtime.args` are read as tritonserver reads them (simulation/engine_flags_triton.py; review rev12
finding F1: they were not read at all, so an unknown flag, a bad boolean, a moved HTTP port or explicit model control
without a model passed and the gate simulated a Ready Triton).

Sources: triton-inference-server/server `src/command_line_parser.cc` (`SetupOptions`, `Parse`, `ParseOption`,
`CheckPortCollision`; release tags for when a flag appeared), KServe `config/runtimes/kserve-tritonserver.yaml`
(`--model-store=/mnt/models --grpc-port=9000 --http-port=8080 --allow-grpc=true --allow-http=true`, metrics scraped
on 8002) and `config/runtimes/kustomization.yaml` (image tritonserver:23.05-py3).
"""

from __future__ import annotations

import copy

import pytest

import gate

from simulation import load_scenario
from stackconfig.load import ROOT, load_stack, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from runtime_stack import refused, sim_spec, triton_refusal, triton_stack


# --- what stops tritonserver at start-up -----------------------------------------------------------------------
@pytest.mark.parametrize("args, shown, why", [
    (["--no-such-flag"], "--no-such-flag", "does not know --no-such-flag ('unrecognized option')"),
    (["--no-such-flag", "4"], "--no-such-flag 4", "unrecognized option"),
    (["--strict-readiness=maybe"], "--strict-readiness=maybe", "expected true, false, on, off, 1 or 0 (any case) "
                                                               "for --strict-readiness: Triton refuses 'maybe'"),
    (["--allow-http=yes"], "--allow-http=yes", "Triton refuses 'yes'"),
    (["--http-port=eighty"], "--http-port=eighty", "expected an integer (std::stoi) for --http-port"),
    (["--http-port=2147483648"], "--http-port=2147483648", "expected an integer (std::stoi)"),
    (["--model-control-mode=manual"], "--model-control-mode=manual", "none, poll or explicit (any case)"),
    (["--log-format=iso8601"], "--log-format=iso8601", "expected default or ISO8601"),
    (["--trace-config=rate"], "--trace-config=rate", "<setting>=<value>"),
    (["stray-positional"], "stray-positional", "Triton takes no positional argument ('Unexpected argument'"),
    (["--", "x"], "x", "expected no argument after '--'"),
    (["-v"], "-v", "Triton has no short options"),
    (["--http-port"], "--http-port", "expected a value after --http-port"),
    (["--disable-auto-complete-config=true"], "--disable-auto-complete-config=true",
     "expected --disable-auto-complete-config alone: it takes no value"),
    (["--help"], "--help", "prints its usage and exits"),
    (["--load-model=*"], "--load-model=*", "expected --model-control-mode=explicit with it, or no --load-model: "
                                           "Triton exits at start-up"),
    (["--grpc-port=8080"], "--grpc-port=8080", "Triton refuses two endpoints on one address and port 8080 "
                                               "(CheckPortCollision)"),
    (["--grpc-infer-thread-count=1"], "--grpc-infer-thread-count=1", "an integer from 2 to 128"),
    (["--http-p=8000"], "--http-p=8000", "expected the flag's full name (--http-port)"),
], ids=["unknown", "unknown-and-value", "bad-bool", "bad-bool-http", "bad-int", "int-range", "bad-mode",
        "log-format-case", "trace-form", "positional", "after-dashes", "short", "no-value", "switch-value", "help",
        "load-model-without-explicit", "grpc-collision", "grpc-threads", "abbreviation"])
def test_what_tritonserver_refuses_at_start_up_is_refused(args, shown, why):
    triton_refusal(args, shown, why)


# --- what moves the server off what the probes, the queue-proxy and the autoscaler use ------------------------
@pytest.mark.parametrize("args, shown, why", [
    (["--http-port=8000"], "--http-port=8000", "expected 8080 or no such flag: KServe's runtime starts Triton with "
                                               "--http-port=8080"),
    (["--http-port", "9000"], "--http-port 9000", "a later --http-port wins"),
    (["--allow-http=false"], "--allow-http=false", "expected true or no such flag: with HTTP off"),
    (["--allow-http=OFF"], "--allow-http=OFF", "expected true or no such flag"),
    (["--http-address=127.0.0.1"], "--http-address=127.0.0.1", "expected 0.0.0.0 or no such flag"),
    (["--allow-metrics=false"], "--allow-metrics=false", "nv_inference_request_duration_us"),
    (["--metrics-port=9102"], "--metrics-port=9102", "expected 8002 or no such flag"),
    (["--metrics-config=counter_latencies=false"], "--metrics-config=counter_latencies=false",
     "expected no counter_latencies=false"),
    (["--allow-sagemaker=true"], "--allow-sagemaker=true", "CheckPortCollision"),
    (["--vertex-ai-port=8081"], "--vertex-ai-port=8081", "expected no --vertex-ai-port"),
    (["--http-restricted-api=health:k=v"], "--http-restricted-api=health:k=v", "neither the probes nor"),
], ids=["http-port", "http-port-spaced", "allow-http", "allow-http-case", "http-address", "metrics-off",
        "metrics-port", "latency-counter", "sagemaker", "vertex", "restricted-api"])
def test_what_moves_triton_off_8080_http_or_its_metrics_is_refused(args, shown, why):
    triton_refusal(args, shown, why)


# --- what loads another set of models, or marks the pod Ready before its model is -----------------------------
@pytest.mark.parametrize("args, shown, why", [
    (["--model-control-mode=explicit"], "--model-control-mode=explicit",
     "expected --load-model=* or --load-model=<the model's name> with it, or --model-control-mode=none (the "
     "default): in explicit mode Triton loads only the models --load-model names, none without one, and "
     "/v2/health/ready still answers 200"),
    (["--model-control-mode=EXPLICIT", "--load-model=resnet", "--load-model=vit"], "--load-model=vit",
     "expected one model, 'resnet': Triton loads every model --load-model names onto the GPU"),
    (["--load-model=foo"], "--load-model=foo", "expected --model-control-mode=explicit with it"),
    (["--model-control-mode=poll"], "--model-control-mode=poll", "in poll mode Triton loads and unloads models"),
    (["--model-repository=/elsewhere"], "--model-repository=/elsewhere", "expected /mnt/models or no such flag"),
    (["--model-store=/mnt/models/"], "--model-store=/mnt/models/", "/mnt/models/ is another path to the same one"),
    (["--strict-readiness=false"], "--strict-readiness=false", "expected true or no such flag: with false "
                                                               "/v2/health/ready answers 200"),
    (["--exit-on-error=false", "--strict-readiness=0"], "--strict-readiness=0", "before its model is loaded"),
], ids=["explicit-alone", "explicit-two-models", "load-model-named", "poll", "second-repository", "repository-slash",
        "non-strict", "non-strict-numeric"])
def test_what_loads_other_models_or_readies_the_pod_early_is_refused(args, shown, why):
    triton_refusal(args, shown, why)


# --- what the simulation does not model --------------------------------------------------------------------------
@pytest.mark.parametrize("arg, why", [
    ("--cuda-memory-pool-byte-size=0:1073741824", "memory Triton sets aside on the GPU or the host"),
    ("--pinned-memory-pool-byte-size=536870912", "memory Triton sets aside on the GPU or the host"),
    ("--rate-limit=execution_count", "expected off or no such flag: the rate limiter"),
    ("--rate-limit-resource=R1:10", "the rate limiter schedules model instances"),
    ("--response-cache-byte-size=1048576", "response cache"),
    ("--cache-config=local,size=1048576", "response cache"),
    ("--backend-config=onnxruntime,default-max-batch-size=8", "the max_batch_size Triton's auto-complete gives"),
    ("--model-load-gpu-limit=0:0.5", "a load failure the simulation does not model"),
    ("--http-max-input-size=1048576", "a smaller cap answers larger requests"),
])
def test_a_flag_whose_effect_is_not_simulated_is_refused_saying_why(arg, why):
    triton_refusal([arg], arg, why)
    assert "does not model" in refused(triton_stack([arg]))


# --- flags that restate the runtime or change nothing simulated --------------------------------------------------
@pytest.mark.parametrize("accepted, bad, why", [
    (["--log-verbose=1", "--log-info=true", "--log-warning", "on", "--log-format=ISO8601", "--id=vision",
      "--exit-timeout-secs=60"], "--log-verbose=loud", "ParseIntBoolOption"),
    (["--http-port=8080", "--allow-http=TRUE", "--model-store=/mnt/models", "--model-repository", "/mnt/models",
      "--strict-readiness=1", "--model-control-mode=None", "--http-address=0.0.0.0"], "--http-port=8081",
     "expected 8080"),
    (["--model-control-mode=explicit", "--load-model=*"], "--load-model=vit", "expected --load-model=* alone"),
    (["--exit-on-error=false", "--disable-auto-complete-config", "--strict-model-config=false",
      "--model-load-thread-count=2", "--model-namespacing=false", "--repository-poll-secs=0"],
     "--exit-on-error=no", "Triton refuses 'no'"),
    (["--allow-grpc=false", "--grpc-port=8080"], "--allow-grpc=maybe", "Triton refuses 'maybe'"),   # no collision
    (["--grpc-port=9001", "--grpc-infer-response-compression-level=HIGH", "--grpc-keepalive-time=7200000",
      "--grpc-infer-thread-count=4", "--reuse-http-port=false", "--http-thread-count=16"],
     "--grpc-infer-response-compression-level=max", "none, low, medium or high"),
    (["--allow-metrics=true", "--metrics-port=8002", "--allow-gpu-metrics=false", "--metrics-interval-ms=1000",
      "--metrics-config=summary_latencies=true", "--trace-config=rate=100",
      "--trace-config", "opentelemetry,url=http://otel:4318/v1/traces", "--trace-level=TIMESTAMPS"],
     "--trace-config=zipkin,rate=1", "[triton|opentelemetry,]<setting>=<value>"),
    (["--rate-limit=OFF", "--allow-sagemaker=false", "--http-max-input-size=134217728", "--"], "-",
     "takes no positional argument"),
    (["--http-port= 8080abc"], "--http-port=-8080", "expected 8080"),   # std::stoi stops at the digits
], ids=["logging", "restating-the-runtime", "explicit-all", "model-repository", "grpc-off", "grpc", "observability",
        "defaults", "stoi"])
def test_neutral_and_restating_flags_are_accepted_and_a_value_triton_refuses_is_not(accepted, bad, why):
    assert sim_spec(triton_stack(accepted)).max_batch_size == 8
    triton_refusal(accepted + [bad], bad, why)


# --- flags newer than the image ----------------------------------------------------------------------------------
def test_a_flag_newer_than_the_triton_release_the_pod_runs_is_refused():
    """`--model-config-name` appeared in 24.05 (v2.46.0), `--allow-client-shm` in 26.04 (v2.68.0); without
    runtime.image the pod runs KServe's kserve-tritonserver image, 23.05."""
    sim_spec(triton_stack(["--model-config-name=h100"]))                                    # 25.08 knows it
    triton_refusal(["--model-config-name=h100"], "--model-config-name=h100", "first appears in Triton 24.05",
                   image=None)
    text = refused(triton_stack(["--model-config-name=a"], None))
    assert "the pod runs Triton 23.05 (KServe's kserve-tritonserver image" in text
    triton_refusal(["--model-config-name=h100"], "--model-config-name=h100", "the pod runs Triton 24.04",
             image="nvcr.io/nvidia/tritonserver:24.04-py3")
    triton_refusal(["--allow-client-shm=false"], "--allow-client-shm=false", "first appears in Triton 26.04")
    triton_refusal(["--model-config-name=h100"], "--model-config-name=h100", "which names no Triton release",
             image="nvcr.io/nvidia/tritonserver@sha256:" + "a" * 64)


# --- the shipped stack, and a scenario's own manifest --------------------------------------------------------------
def _staging(args: list[str]) -> dict:
    project, values = stack_config_values("staging")
    cfg = project_values(values, project)
    vision = next(s for s in cfg["services"] if s["name"] == "vision")
    vision["runtime"] = {**vision["runtime"], "args": args}
    return cfg


def test_the_staging_triton_service_loads_with_neutral_args_and_is_refused_with_a_moved_port():
    assert load_stack("staging").services[1].engine == "triton"
    parse_stack_config(_staging(["--log-verbose=1", "--exit-on-error=true", "--model-control-mode=none"]), "p",
                       "staging")
    with pytest.raises(InputError) as err:
        parse_stack_config(_staging(["--http-port=8000", "--no-such-flag"]), "p", "staging")
    text = str(err.value)
    assert "services[1].runtime.args: got '--http-port=8000'; expected 8080" in text
    assert "services[1].runtime.args: got '--no-such-flag'; expected a flag tritonserver knows" in text


def test_a_scenarios_own_triton_manifest_is_held_to_the_same_rules():
    stack = load_stack("staging")
    scenario = copy.deepcopy(gate.scenario_for(stack, next(s for s in stack.services if s.name == "vision")))
    container = scenario["inferenceService"]["spec"]["predictor"]["model"]
    assert load_scenario(copy.deepcopy(scenario), base_dir=ROOT).server.kind == "triton"
    container.setdefault("args", []).append("--model-control-mode=explicit")
    with pytest.raises(InputError) as err:
        load_scenario(scenario, base_dir=ROOT)
    assert [p.value for p in err.value.problems if p.path == "inferenceService.spec.predictor.model.args"] == \
        ["--model-control-mode=explicit"]


# --- Review rev12-diff F2/F8: Triton's gRPC listener is held to the ports the pod uses, as every server's --------
def _mode(mode: str, args: list[str]) -> dict:
    cfg = triton_stack(args)
    cfg["services"][0]["deploymentMode"] = mode
    return cfg


@pytest.mark.parametrize("port", ["8012", "9091", "8008"])
def test_grpc_on_a_queue_proxy_port_is_refused_in_knative_mode_and_free_in_standard(port):
    """r2: --grpc-port=8012 was accepted while KServe's --grpc_port=8012 was refused; in Standard mode no
    queue-proxy runs, so there both are free."""
    text = refused(_mode("Knative", [f"--grpc-port={port}"]))
    assert f"services[0].runtime.args: got '--grpc-port={port}'; expected a port, 0 to 65535, other than 8080" in text
    assert "and the queue-proxy's own (8008, 8012, 8013, 8022, 8112, 9090, 9091" in text
    sim_spec(_mode("Standard", [f"--grpc-port={port}"]))
    sim_spec(_mode("Knative", [f"--grpc-port={port}", "--allow-grpc=false"]))   # no gRPC listener: nothing to bind


def test_grpc_on_the_http_port_is_refused_once_as_triton_refuses_it():
    text = refused(_mode("Standard", ["--grpc-port=8080"]))
    assert text.count("got '--grpc-port=8080'") == 1 and "CheckPortCollision" in text


@pytest.mark.parametrize("args", [["--allow-http=false", "--allow-http=true"],
                                  ["--model-control-mode=poll", "--model-control-mode=none"],
                                  ["--strict-readiness=false", "--strict-readiness=true"]])
def test_a_setting_overridden_by_a_later_one_is_judged_by_the_last(args):
    """Review 12 (fuzz), F6: getopt_long keeps the last of a repeated setting, so an earlier value the stack would
    refuse is overridden; the reversed order ends on it and is refused."""
    parse_stack_config(triton_stack(args), "p", "dev")
    text = refused(triton_stack(list(reversed(args))))
    assert repr(args[0]) in text or args[0] in text


def test_each_repository_path_counts_whatever_its_place():
    """--model-repository adds a repository each time: an extra path before /mnt/models is still a second one."""
    text = refused(triton_stack(["--model-repository=/x", "--model-repository=/mnt/models"]))
    assert "--model-repository=/x" in text

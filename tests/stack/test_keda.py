"""Standard-mode concurrency scaling through KEDA: the ScaledObject the stack renders, its offline schema, the
config it refuses before any resource, and the simulation reading that very object."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gate import scenario_for
from manifests import render_stack
from manifests.inference_service import autoscaler, inference_service
from manifests.keda import in_flight_query
from offline import run_program
from program_refusal import refusal
from simulation import load_scenario
from simulation.autoscaler.hpa import Policy, Rules
from stackconfig.load import ROOT, load_stack
from validation.kubernetes import normalise, validation_errors

P = "kserve-preflight"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


@pytest.fixture(scope="module")
def staging():
    cfg = load_stack("staging")
    [vision] = [s for s in cfg.services if s.name == "vision"]
    return cfg, vision


def test_standard_concurrency_renders_a_scaled_object_not_an_hpa(staging):
    cfg, vision = staging
    kinds = [m["kind"] for m in render_stack(cfg)]
    assert "ScaledObject" in kinds and "HorizontalPodAutoscaler" not in kinds
    so = autoscaler(vision)
    assert so["metadata"] == {**so["metadata"], "name": "vision-predictor-scaler", "namespace": "kserve-inference"}
    spec = so["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vision-predictor"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (vision.min_replicas, vision.max_replicas)
    [trigger] = spec["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["threshold"] == "8"  # scaleTarget: in-flight requests per pod
    assert trigger["metadata"]["serverAddress"] == "http://prometheus-operated.monitoring.svc:9090"
    assert "nv_inference_request_duration_us" in trigger["metadata"]["query"]  # Triton: Little's law
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] == vision.hpa_behavior
    # KServe creates no autoscaler of its own next to KEDA's keda-hpa-vision-predictor-scaler.
    ann = inference_service(cfg, vision)["metadata"]["annotations"]
    assert ann["serving.kserve.io/autoscalerClass"] == "external"


@pytest.mark.parametrize("engine, metrics", [
    ("vllm", ("vllm:num_requests_running{", "vllm:num_requests_waiting{")),
    ("tgi", ("tgi_queue_size{", "tgi_batch_current_size{")),
])
def test_query_sums_the_runtimes_running_and_waiting_requests(staging, engine, metrics):
    _, vision = staging
    query = in_flight_query(replace(vision, engine=engine, name="chat"))
    selector = '{namespace="kserve-inference",pod=~"chat-predictor-.*"}'
    assert query == f"sum({metrics[0][:-1]}{selector}) + sum({metrics[1][:-1]}{selector})"


def test_scaled_object_validates_offline_and_a_misspelt_field_does_not(staging):
    _, vision = staging
    so = autoscaler(vision)
    assert validation_errors(so) == []
    bad = normalise(so)
    bad["spec"]["maxReplicas"] = bad["spec"].pop("maxReplicaCount")
    bad["spec"]["triggers"][0]["metadata"]["threshold"] = "eight"
    errors = validation_errors(bad)
    assert any("'maxReplicas' was unexpected" in e for e in errors), errors
    assert any("triggers.0.metadata.threshold" in e for e in errors), errors


def test_program_registers_the_scaled_object_after_the_inference_service():
    r = run_program("staging")
    assert r.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler") == []
    [so] = r.of_type(SCALED_OBJECT)
    assert so.inputs["metadata"]["name"] == "vision-predictor-scaler"
    assert normalise(so.inputs["spec"])["minReplicaCount"] == 1


def _vision(c):
    return c[f"{P}:services"][1]


@pytest.mark.parametrize("edit, where, allowed", [
    pytest.param(lambda c: _vision(c).update(scaleMetric="cpu", scaleTarget=60, hpa={"scaler": "keda"}),
                 "services[1].hpa.scaler: got 'keda'", "expected hpa for scaleMetric cpu", id="keda-on-cpu"),
    pytest.param(lambda c: _vision(c)["hpa"].update(podsMetric="inflight_requests"),
                 "services[1].hpa.podsMetric", "expected none with hpa.scaler keda", id="pods-metric-with-keda"),
    pytest.param(lambda c: _vision(c)["hpa"].update(prometheusAddress="prometheus:9090"),
                 "services[1].hpa.prometheusAddress: got 'prometheus:9090'", "expected an http(s) URL",
                 id="prometheus-address-not-a-url"),
    pytest.param(lambda c: _vision(c)["hpa"].update(scaler="kedaa"), "services[1].hpa.scaler: got 'kedaa'",
                 "keda", id="unknown-scaler"),
    pytest.param(lambda c: _vision(c)["hpa"].update(scrapeInterval="30"),
                 "services[1].hpa.scrapeInterval: got '30'", "expected a duration like '30s'", id="scrape-no-unit"),
    pytest.param(lambda c: _vision(c)["hpa"].update(scrapeInterval="10m"),
                 "services[1].hpa.scrapeInterval: got '10m'", "between 1s and 300s", id="scrape-past-lookback"),
    pytest.param(lambda c: _vision(c)["hpa"].update(scrapeInterval="100ms"),
                 "services[1].hpa.scrapeInterval: got '100ms'", "between 1s and 300s", id="scrape-below-1s"),
    pytest.param(lambda c: _vision(c)["hpa"].update(scrapeInterval=30),
                 "services[1].hpa.scrapeInterval: got 30", "expected a duration", id="scrape-a-number"),
    pytest.param(lambda c: _vision(c)["hpa"].update(scaler="hpa", scrapeInterval="15s"),
                 "services[1].hpa.scrapeInterval: got '15s'", "expected none with hpa.scaler hpa",
                 id="scrape-without-keda"),
    # null reads as absent in an HPA but KEDA's CRD refuses it: the fuzzer rendered an invalid ScaledObject
    pytest.param(lambda c: _vision(c)["hpa"]["behavior"].update(scaleDown=None),
                 "services[1].hpa.behavior.scaleDown: got None", "a KEDA ScaledObject refuses null", id="null-rules"),
    pytest.param(lambda c: _vision(c)["hpa"]["behavior"]["scaleDown"].update(selectPolicy=None),
                 "services[1].hpa.behavior.scaleDown.selectPolicy: got None", "leave the key out", id="null-nested"),
])
def test_bad_keda_config_is_refused_before_any_resource(edit, where, allowed, registered):
    message = refusal("staging", edit, registered)
    assert where in message and allowed in message, message


def test_the_hpa_scaler_keeps_the_adapter_option():
    r = run_program("staging", edit=lambda c: _vision(c)["hpa"].update(scaler="hpa"))
    assert r.of_type(SCALED_OBJECT) == []
    [hpa] = r.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    [metric] = normalise(hpa.inputs["spec"])["metrics"]
    assert metric["pods"]["metric"]["name"] == "inflight_requests"


def test_simulation_reads_the_rendered_scaled_object(staging):
    cfg, vision = staging
    scenario = scenario_for(cfg, vision)
    assert scenario["hpa"] == autoscaler(vision)  # the very object the program registers
    hpa = load_scenario(scenario, base_dir=ROOT).serving.hpa
    assert (hpa.min_replicas, hpa.max_replicas, hpa.metric, hpa.target) == (1, 1, "concurrency", 8.0)
    assert hpa.scale_down == Rules(600.0, (Policy("Pods", 1, 120.0),), "Max")
    # A knob changed in the config reaches the simulation only through the ScaledObject.
    wider = replace(vision, scale_target=3, max_replicas=3)
    hpa = load_scenario(scenario_for(cfg, wider), base_dir=ROOT).serving.hpa
    assert (hpa.max_replicas, hpa.target) == (3, 3.0)


def test_simulation_refuses_a_scaled_object_it_cannot_model(staging):
    from validation.errors import InputError
    cfg, vision = staging
    scenario = scenario_for(cfg, vision)
    scenario["hpa"]["spec"]["triggers"][0]["type"] = "cpu"
    with pytest.raises(InputError, match="type prometheus with metricType AverageValue"):
        load_scenario(scenario, base_dir=ROOT)


@pytest.mark.parametrize("trigger", [{"type": "prometheus", "metadata": "threshold=8"},
                                     {"type": "prometheus", "metricType": "AverageValue",
                                      "metadata": {"threshold": "nan"}}])
def test_simulation_reports_a_malformed_trigger_without_a_traceback(staging, trigger):
    from validation.errors import InputError
    cfg, vision = staging
    scenario = scenario_for(cfg, vision)
    scenario["hpa"]["spec"]["triggers"] = [trigger]
    with pytest.raises(InputError, match="threshold"):
        load_scenario(scenario, base_dir=ROOT)


def test_scrape_interval_reaches_the_simulation_through_the_scaled_object(staging):
    from simulation.autoscaler.keda import SCRAPE_ANNOTATION
    cfg, vision = staging
    so = autoscaler(vision)
    assert so["metadata"]["annotations"] == {SCRAPE_ANNOTATION: "30s"}   # the default, prometheus-operator's
    keda = load_scenario(scenario_for(cfg, vision), base_dir=ROOT).serving.hpa.keda
    assert (keda.kind, keda.window_s, keda.scrape_interval_s, keda.polling_interval_s, keda.cached) == \
        ("rate", 60.0, 30.0, 30.0, False)
    # 1 m scrapes (Prometheus' own default): the rate window widens to two intervals, else rate() sees one sample.
    slow = replace(vision, prometheus_scrape_interval_s=60.0)
    assert autoscaler(slow)["metadata"]["annotations"] == {SCRAPE_ANNOTATION: "1m"}
    assert "[2m]" in in_flight_query(slow)
    keda = load_scenario(scenario_for(cfg, slow), base_dir=ROOT).serving.hpa.keda
    assert (keda.window_s, keda.scrape_interval_s) == (120.0, 60.0)


@pytest.mark.parametrize("interval", ["15s", "1s"])      # 1 s: the floor itself is allowed
def test_the_stack_setting_is_read(staging, interval):
    r = run_program("staging", edit=lambda c: _vision(c)["hpa"].update(scrapeInterval=interval))
    [so] = r.of_type(SCALED_OBJECT)
    assert so.inputs["metadata"]["annotations"] == {"preflight.kserve.io/prometheus-scrape-interval": interval}


@pytest.mark.parametrize("edit, where, allowed", [
    (lambda so: so["metadata"]["annotations"].update({"preflight.kserve.io/prometheus-scrape-interval": "soon"}),
     "hpa.metadata.annotations[preflight.kserve.io/prometheus-scrape-interval]", "expected a duration like '30s'"),
    (lambda so: so["spec"].update(pollingInterval=0), "hpa.spec.pollingInterval", "expected an integer >= 1"),
    (lambda so: so["spec"].update(minReplicaCount=14126), "hpa.spec.minReplicaCount", "between 1 and 10000"),
    (lambda so: so["spec"]["triggers"][0].update(useCachedMetrics="yes"), "hpa.spec.triggers[0].useCachedMetrics",
     "expected true or false"),
    (lambda so: so["spec"]["triggers"][0]["metadata"].update(query="sum(irate(x[1m]))"),
     "hpa.spec.triggers[0].metadata.query", "expected one of the in-flight queries: sum(vllm:num_requests_running"),
    (lambda so: so["spec"]["triggers"][0]["metadata"].update(query="avg(vllm:num_requests_running)"),
     "got 'avg(vllm:num_requests_running)'", "sum(rate(nv_inference_request_duration_us{…}[window])) / 1e6 (Triton)"),
    (lambda so: so["metadata"]["annotations"].update({"preflight.kserve.io/prometheus-scrape-interval": "500ms"}),
     "hpa.metadata.annotations[preflight.kserve.io/prometheus-scrape-interval]: got '500ms'",
     "between 1s and 300s"),
    (lambda so: so["spec"]["triggers"][0]["metadata"].pop("query"), "hpa.spec.triggers[0].metadata.query",
     "expected a PromQL query"),
])
def test_simulation_refuses_a_metric_pipeline_it_cannot_model(staging, edit, where, allowed):
    from validation.errors import InputError
    cfg, vision = staging
    scenario = scenario_for(cfg, vision)
    edit(scenario["hpa"])
    with pytest.raises(InputError) as err:
        load_scenario(scenario, base_dir=ROOT)
    assert where in str(err.value) and allowed in str(err.value), str(err.value)


def test_simulation_reads_polling_and_cached_metrics(staging):
    cfg, vision = staging
    scenario = scenario_for(cfg, vision)
    scenario["hpa"]["spec"]["pollingInterval"] = 10
    scenario["hpa"]["spec"]["triggers"][0]["useCachedMetrics"] = True
    del scenario["hpa"]["metadata"]["annotations"]                      # absent: 30 s
    keda = load_scenario(scenario, base_dir=ROOT).serving.hpa.keda
    assert (keda.polling_interval_s, keda.cached, keda.scrape_interval_s) == (10.0, True, 30.0)

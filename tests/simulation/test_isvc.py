"""Reading the InferenceService manifest: KServe defaults, Knative annotations, float numbers, containers."""

from __future__ import annotations

import pytest

from validation.errors import InputError
from simulation.isvc import ServingSpec


def manifest(pred: dict | None = None, ann: dict | None = None, container: dict | None = None,
             key: str = "model") -> dict:
    cont = {"modelFormat": {"name": "huggingface"}, **(container or {})}
    p = {**(pred or {})}
    if key == "containers":
        p["containers"] = [{"name": "kserve-container", **(container or {})}]
    else:
        p[key] = cont
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "svc", "annotations": ann or {}}, "spec": {"predictor": p}}


def test_defaults_knative_mode():
    s = ServingSpec.from_manifest(manifest())
    assert s.mode == "Knative"                      # shipped default deploymentMode is Serverless
    assert s.kpa.min_scale == 1                     # KServe DefaultMinReplicas
    assert s.kpa.max_scale == 0 and s.container_concurrency == 0 and s.timeout_s == 300
    assert s.kpa.total_value == 100 and s.kpa.target_burst_capacity == 211
    assert s.readiness_period_s == 0                # Knative's aggressive default probe


def test_floats_strings_and_containers():
    s = ServingSpec.from_manifest(manifest(
        {"minReplicas": 0.0, "maxReplicas": 3.0, "containerConcurrency": 1.0, "timeout": 60.0},
        container={"image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {"nvidia.com/gpu": "2"}},
                   "env": [{"name": "MAX_MODEL_LEN", "value": "4096"}], "args": ["--max-num-seqs", "64"],
                   "startupProbe": {"initialDelaySeconds": 30, "periodSeconds": 30, "failureThreshold": 60},
                   "readinessProbe": {"periodSeconds": 10}},
        key="containers"))
    assert (s.kpa.min_scale, s.kpa.max_scale, s.container_concurrency, s.timeout_s) == (0, 3, 1, 60.0)
    assert s.gpus == 2 and s.image.startswith("vllm/")
    assert s.env == {"MAX_MODEL_LEN": "4096"} and s.args == ("--max-num-seqs", "64")
    assert (s.startup_probe.initial_delay_s, s.startup_probe.period_s,
            s.startup_probe.failure_threshold) == (30, 30, 60)
    assert s.readiness_period_s == 10
    assert s.kpa.target_value == pytest.approx(0.7)


def test_scale_target_and_metric_are_translated():
    s = ServingSpec.from_manifest(manifest({"containerConcurrency": 4, "scaleTarget": 10,
                                            "scaleMetric": "concurrency"}))
    assert s.kpa.total_value == 4                   # min(target, CC)
    r = ServingSpec.from_manifest(manifest({"scaleTarget": 50, "scaleMetric": "rps"}))
    assert r.kpa.metric == "rps" and r.kpa.target_value == pytest.approx(35)


def test_scale_target_and_metric_override_the_isvcs_own_annotations():
    """KServe's SetAutoScalingAnnotations writes scaleTarget/scaleMetric over the ISVC's target/metric annotations;
    without them the annotations count."""
    ann = {"autoscaling.knative.dev/target": "4", "autoscaling.knative.dev/metric": "rps"}
    s = ServingSpec.from_manifest(manifest({"containerConcurrency": 16, "scaleTarget": 8,
                                            "scaleMetric": "concurrency"}, ann=ann))
    assert (s.kpa.metric, s.kpa.target, s.kpa.target_value) == ("concurrency", 8.0, pytest.approx(5.6))
    own = ServingSpec.from_manifest(manifest({"containerConcurrency": 16}, ann=ann))
    assert (own.kpa.metric, own.kpa.target) == ("rps", 4.0)


def test_mode_aliases():
    for alias, mode in [("Serverless", "Knative"), ("Knative", "Knative"), ("RawDeployment", "Standard"),
                        ("Standard", "Standard")]:
        s = ServingSpec.from_manifest(manifest(ann={"serving.kserve.io/deploymentMode": alias}))
        assert s.mode == mode


@pytest.mark.parametrize("m,fragment", [
    (manifest(ann={"serving.kserve.io/deploymentMode": "ModelMesh"}), "deploymentMode"),
    (manifest({"minReplicas": 1.5}), "minReplicas"),
    (manifest({"containerConcurrency": -1}), "containerConcurrency"),
    (manifest({"timeout": 900}), "timeout"),
    (manifest(container={"resources": {"limits": {"nvidia.com/gpu": "half"}}}), "nvidia.com/gpu"),
    (manifest({"scaleMetric": "cpu"}), "autoscaling.knative.dev/class"),
    (manifest({"minReplicas": 3}, ann={"autoscaling.knative.dev/max-scale": "2"}), "minReplicas"),
], ids=["modelmesh", "float-replicas", "negative-cc", "timeout-over-600", "gpu-text", "cpu-in-knative", "min>max"])
def test_bad_manifests(m, fragment):
    with pytest.raises(InputError) as err:
        ServingSpec.from_manifest(m)
    assert fragment in str(err.value)


def test_min_scale_annotation_is_overwritten_by_min_replicas():
    # kserve ksvc_reconciler.go createKnativeService writes min-scale from minReplicas (nil → 1)
    s = ServingSpec.from_manifest(manifest(ann={"autoscaling.knative.dev/min-scale": "3"}))
    assert s.kpa.min_scale == 1
    t = ServingSpec.from_manifest(manifest({"maxReplicas": 5}, ann={"autoscaling.knative.dev/max-scale": "2"}))
    assert t.kpa.max_scale == 5
    u = ServingSpec.from_manifest(manifest(ann={"autoscaling.knative.dev/max-scale": "2"}))
    assert u.kpa.max_scale == 2


@pytest.mark.parametrize("engine, args, ann, expected", [
    ("vllm", ["--max-model-len=5120", "--max-num-seqs", "16"], {}, {"max_model_len": 5120, "max_num_seqs": 16}),
    ("tgi", ["--max-input-tokens=4096", "--max-total-tokens=5120", "--max-batch-size=8"], {},
     {"max_input_tokens": 4096, "max_model_len": 5120, "max_num_seqs": 8}),
    ("triton", [], {"preflight.kserve.io/triton-max-batch-size": "16",
                    "preflight.kserve.io/triton-max-image-pixels": "1048576",
                    "preflight.kserve.io/triton-max-queue-delay-microseconds": "2000",
                    "preflight.kserve.io/triton-max-queue-size": "64"},
     {"max_batch_size": 16, "max_pixels": 1048576, "max_queue_delay_microseconds": 2000, "max_queue_size": 64}),
    # huggingfaceserver's --max_length is the whole context: prompt + max_tokens (generative_model.py)
    ("naive", ["--max_length=5120"], {}, {"max_model_len": 5120}),
], ids=["vllm", "tgi", "triton", "naive"])
def test_caps_come_from_what_the_runtime_reads(engine, args, ann, expected):
    """Only the runtime's own flags (Triton: its declared config.pbtxt values) are caps; MAX_* env vars the runtime
    does not read (TGI's launcher reads MAX_INPUT_TOKENS and MAX_BATCH_SIZE, but a flag wins over its variable) and
    another runtime's flags are ignored (`--max_length` is huggingfaceserver's own, read for vllm and naive)."""
    from simulation.isvc import server_from_manifest

    env = [{"name": n, "value": "7"} for n in ("MAX_INPUT_TOKENS", "MAX_NEW_TOKENS", "MAX_BATCH_SIZE",
                                                "MAX_IMAGE_PIXELS")]
    foreign = {"vllm": ["--max-batch-size=3"], "tgi": ["--max_length=3"], "triton": ["--max_length=3"]}.get(engine, [])
    m = manifest(ann={"preflight.kserve.io/engine": engine, **ann}, container={"args": args + foreign, "env": env})
    server = server_from_manifest(m, ServingSpec.from_manifest(m))
    assert {k: v for k, v in server.items() if k not in ("kind", "model")} == expected

"""Every class of config mistake stops the program before any resource is registered, with a clear message."""

from __future__ import annotations

import subprocess
import sys

import pulumi
import pytest

from stackconfig.load import ROOT
from offline import run_program

P = "kserve-preflight"


def _svc(cfg, i=0):
    return cfg[f"{P}:services"][i]


CASES = [
    pytest.param(lambda c: _svc(c).update(minReplica=1), "kserve-preflight:services[0].minReplica",
                 "did you mean 'minReplicas'", id="unknown-key-typo"),
    pytest.param(lambda c: c[f"{P}:gpuNodeGroup"].update(maxSzie=3), "gpuNodeGroup.maxSzie",
                 "did you mean 'maxSize'", id="unknown-key-typo-node-group"),
    pytest.param(lambda c: _svc(c).update(maxReplicas="four"), "services[0].maxReplicas: got 'four'",
                 "expected an integer", id="wrong-type"),
    pytest.param(lambda c: _svc(c).update(containerConcurrency=5000), "services[0].containerConcurrency: got 5000",
                 "between 0 and 1000", id="out-of-range"),
    pytest.param(lambda c: _svc(c).update(tolerations=[{"key": "dedicated", "operator": "Exists"}]),
                 "services[0].tolerations", "toleration for the node group's taint nvidia.com/gpu=true:NoSchedule",
                 id="tolerations-miss-taint"),
    pytest.param(lambda c: _svc(c)["resources"].update(gpus=2), "services[0].resources.gpus: got 2",
                 "a g6e.xlarge node has 1 GPU(s)", id="gpus-per-pod-above-node"),
    pytest.param(lambda c: _svc(c).update(maxReplicas=4), "services[0].maxReplicas: got 4",
                 "expected at most 3: the node group holds maxSize 3", id="max-replicas-above-node-group"),
    pytest.param(lambda c: _svc(c)["model"].update(name="llama-3-70b"), "services[0].model.name: got 'llama-3-70b'",
                 "weights take 131.4 GiB", id="model-does-not-fit"),
    pytest.param(lambda c: _svc(c).update(minReplicas=2, maxReplicas=1), "services[0].minReplicas: got 2",
                 "expected minReplicas <= maxReplicas (1)", id="min-above-max"),
    pytest.param(lambda c: _svc(c).update(timeout=900), "services[0].timeout: got 900",
                 "at most 600 seconds", id="timeout-above-knative-max"),
    pytest.param(lambda c: _svc(c)["annotations"].update({"autoscaling.knative.dev/window": "2 minutes"}),
                 "annotations[autoscaling.knative.dev/window]: got '2 minutes'", "expected a duration",
                 id="bad-annotation"),
    pytest.param(lambda c: _svc(c)["runtime"].update(image="kserve/huggingfaceserver:latest"),
                 "services[0].runtime.image", "pinned image tag", id="unpinned-image"),
    pytest.param(lambda c: _svc(c).update(probes={"startup": {"periodSeconds": 1, "failureThreshold": 2}}),
                 "services[0].probes.startup", "restarts the pod before the model is loaded",
                 id="startup-probe-too-short"),
    pytest.param(lambda c: c.pop(f"{P}:cluster"), "kserve-preflight:cluster: got None", "required",
                 id="missing-cluster"),
    pytest.param(lambda c: c[f"{P}:modelCache"].update(namespace="models"), "modelCache.namespace: got 'models'",
                 "a pod mounts only PVCs of its own namespace", id="model-cache-in-another-namespace"),
    pytest.param(lambda c: _svc(c)["resources"].update(cpu="4"), "services[0].resources: got {'cpu': '4'",
                 "a g6e.xlarge offers 3920m CPU", id="pod-does-not-fit-allocatable"),
    pytest.param(lambda c: c[f"{P}:gpuNodeGroup"].update(instanceTypes=["g6e.xlarge", "g6e.2xlarge"]),
                 "gpuNodeGroup.instanceTypes", "sizes new nodes from the first type only", id="mixed-node-shapes"),
    pytest.param(lambda c: c[f"{P}:gpuNodeGroup"].update(otherDaemonSets={"cpu": "1", "memory": "4Gi"}),
                 "services[0].resources", "after the DaemonSets' 1150m", id="daemonsets-crowd-out-the-pod"),
    pytest.param(lambda c: c[f"{P}:gpuNodeGroup"].update(name="gpu-l40s-spot-pool-for-chat"),
                 "gpuNodeGroup.name: got 'gpu-l40s-spot-pool-for-chat'", "at most 37 characters",
                 id="node-group-name-too-long"),
    pytest.param(lambda c: c[f"{P}:cluster"].update(kubernetesVersion=1.30), "cluster.kubernetesVersion: got 1.3",
                 "quote it: YAML reads 1.30 as 1.3", id="unquoted-kubernetes-version"),
    pytest.param(lambda c: c[f"{P}:cluster"].update(namespace="KServe_Inference"),
                 "cluster.namespace: got 'KServe_Inference'", "expected a Kubernetes namespace name",
                 id="namespace-not-dns-1123"),
    pytest.param(lambda c: c[f"{P}:modelCache"].update(pvcName="Model Cache"), "modelCache.pvcName: got 'Model Cache'",
                 "expected a Kubernetes object name", id="pvc-name-not-dns-1123"),
    pytest.param(lambda c: c.__setitem__(f"{P}:services", {"name": "chat"}), "services: got {'name': 'chat'}",
                 "expected a list", id="services-not-a-list"),
    pytest.param(lambda c: _svc(c).update(model="llama-3-8b"), "services[0].model: got 'llama-3-8b'",
                 "expected a mapping", id="string-for-a-mapping"),
]


@pytest.mark.parametrize("edit, where, allowed", CASES)
def test_bad_config_is_refused_before_any_resource(edit, where, allowed, registered):
    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=edit)
    message = str(err.value)
    assert where in message and allowed in message, message
    assert message.startswith("invalid stack config:")
    assert registered == []


def test_the_registration_probe_sees_resources(registered):
    """Control for the fixture above: on a good config it does record what the program registers."""
    run_program("dev")
    assert "gpu-ng" in registered and len(registered) > 10


def test_all_problems_are_reported_at_once():
    def edit(c):
        _svc(c).update(timeout=900, minReplica=1)
        c[f"{P}:gpuNodeGroup"]["minSize"] = 5

    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=edit)
    text = str(err.value)
    assert "4 problems" in text  # minSize > maxSize also puts desiredSize out of bounds
    assert "timeout" in text and "minReplica" in text and "gpuNodeGroup.minSize" in text


def test_prod_refuses_scale_to_zero_unless_allowed():
    with pytest.raises(pulumi.RunError, match="set allowScaleToZero: true"):
        run_program("prod", edit=lambda c: _svc(c).update(minReplicas=0))
    # Allowed, the config passes; the gate's scale-from-zero scenario then shows what it costs chat's users.
    with pytest.raises(pulumi.RunError, match=r"chat \[scaleFromZero\]: p99 time to first token"):
        run_program("prod", edit=lambda c: _svc(c).update(minReplicas=0, allowScaleToZero=True))
    run = run_program("prod", edit=lambda c: _svc(c).update(minReplicas=0, allowScaleToZero=True,
                                                           stress={**_svc(c)["stress"], "scaleFromZero": False}))
    assert run.resources


def test_render_cli_reports_a_bad_stack_with_exit_2_and_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "manifests", "render", "--stack", "missing", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "--stack: got 'missing'; expected one of dev, prod, staging" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("text, allowed", [
    ("- a\n", "expected a mapping with a `config:` key"),
    ("config: x\n", 'expected a mapping of "<namespace>:<key>" to values'),
    ("config: [1]\n", 'expected a mapping of "<namespace>:<key>" to values'),
    ("config: {\n", "expected valid YAML"),
], ids=["list", "config-string", "config-list", "unparseable"])
def test_malformed_stack_file_is_an_input_error(tmp_path, text, allowed):
    from validation.errors import InputError
    from stackconfig.load import load_stack

    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.bad.yaml").write_text(text)
    with pytest.raises(InputError, match="Pulumi.bad.yaml") as err:
        load_stack("bad", tmp_path)
    assert allowed in str(err.value)


def test_empty_stack_file_names_the_required_keys(tmp_path):
    from validation.errors import InputError
    from stackconfig.load import load_stack

    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.empty.yaml").write_text("")
    with pytest.raises(InputError) as err:
        load_stack("empty", tmp_path)
    assert "kserve-preflight:cluster: got None; this key is required" in str(err.value)
    assert "kserve-preflight:services: got None; this key is required" in str(err.value)


def test_hpa_behavior_is_schema_checked_before_any_resource():
    """hpa.behavior goes into the HPA verbatim: a typo must stop `pulumi up`, not fail at the API server later."""
    def edit(c):
        [vision] = [s for s in c[f"{P}:services"] if s["name"] == "vision"]
        vision["hpa"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = "10m"

    with pytest.raises(pulumi.RunError) as err:
        run_program("staging", edit=edit)
    assert "hpa.behavior: got" in str(err.value)
    assert "behavior.scaleDown.stabilizationWindowSeconds: '10m' is not of type 'integer'" in str(err.value)




@pytest.mark.parametrize("gated", [True, False], ids=["gated-refused", "ungated-loads"])
def test_a_memory_hpa_only_on_a_service_the_gate_does_not_simulate(tmp_path, gated):
    """Staging's Standard-mode vision service with scaleMetric memory: the gate cannot predict a memory HPA (a model
    server's memory does not follow its load), so a service with an SLO is refused naming the stack key; without
    slo/workload the gate skips it and it loads."""
    import yaml
    from stackconfig.load import load_stack
    from validation.errors import InputError

    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.staging.yaml").read_text())
    svc = doc["config"][f"{P}:services"][1]
    assert svc["deploymentMode"] == "Standard"
    svc["scaleMetric"] = "memory"
    if not gated:
        for key in ("slo", "workload", "scenarios", "stress"):
            svc.pop(key, None)
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.mem.yaml").write_text(yaml.safe_dump(doc))
    if gated:
        with pytest.raises(InputError) as err:
            load_stack("mem", tmp_path)
        assert "services[1].scaleMetric: got 'memory'; expected cpu or concurrency" in str(err.value)
    else:
        assert load_stack("mem", tmp_path).services[1].scale_metric == "memory"

"""A scenario's own InferenceService: each httpGet probe's path is held to the routes of the server its container
runs (simulation/probe_routes.py, the table the stack uses), so `python -m simulation run` refuses the field
guides' `/healthz`, `/readyz`, `/livez` on KServe's huggingfaceserver (exit 2) instead of simulating a pod that
would never become Ready (reviewer rev11-guides F1)."""

from __future__ import annotations

import pytest
import yaml

from simulation import load_scenario
from simulation.__main__ import main
from validation.errors import InputError

BASE = {"workload": {"kind": "poisson", "rate": 0.5}, "server": {"kind": "simple", "base_s": 0.5},
        "duration_s": 120}


def _probe(path: str | None, **timing) -> dict:
    get = {"port": 8080} if path is None else {"path": path, "port": 8080}
    return {"httpGet": get, "periodSeconds": 2, "failureThreshold": 180, **timing}


def _scenario(scn, container_probes: dict, **predictor) -> dict:
    isvc = scn.isvc(cc=1, **predictor)
    isvc["spec"]["predictor"]["model"].update(container_probes)
    return {"inferenceService": isvc, **BASE}


def _problems(mapping: dict) -> str:
    with pytest.raises(InputError) as err:
        load_scenario(mapping)
    return str(err.value)


def test_the_guides_probes_are_refused_in_a_scenario(scn):
    msg = _problems(_scenario(scn, {"startupProbe": _probe("/healthz"), "readinessProbe": _probe("/readyz"),
                                    "livenessProbe": _probe("/livez")}))
    for key, path in (("startupProbe", "/healthz"), ("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        assert f"inferenceService.spec.predictor.model.{key}.httpGet.path: got '{path}'" in msg
    assert msg.count("the server answers 404 on it") == 3


def test_the_cli_exits_2_naming_the_probe(scn, tmp_path, capsys):
    path = tmp_path / "guide.yaml"
    path.write_text(yaml.safe_dump(_scenario(scn, {"readinessProbe": _probe("/readyz")})))
    with pytest.raises(SystemExit) as exc:
        main(["run", str(path), "--json"])
    assert exc.value.code == 2
    assert "readinessProbe.httpGet.path: got '/readyz'" in capsys.readouterr().err


def test_the_model_route_follows_the_isvc_name(scn):
    """kserve-huggingfaceserver runs `--model_name={{.Name}}`: the model is the InferenceService's name ('svc')."""
    load_scenario(_scenario(scn, {"readinessProbe": _probe("/v2/models/svc/ready"),
                                  "startupProbe": _probe("/v1/models/svc")}))
    assert "registers this model as 'svc', not 'llama'" in _problems(
        _scenario(scn, {"readinessProbe": _probe("/v2/models/llama/ready")}))


def test_an_empty_path_is_the_root_a_liveness_route(scn):
    """The kubelet asks '/' for an httpGet probe without a path; on KServe that is DataPlane.live."""
    msg = _problems(_scenario(scn, {"readinessProbe": _probe(None)}))
    assert "readinessProbe.httpGet.path: got '/'" in msg and "is a liveness route" in msg
    load_scenario(_scenario(scn, {"livenessProbe": _probe(None)}))


def test_a_custom_vllm_container_serves_health(scn):
    isvc = scn.isvc(cc=1)
    pred = isvc["spec"]["predictor"]
    pred.pop("model")
    pred["containers"] = [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.11.0",
                           "resources": {"limits": {"nvidia.com/gpu": "1"}},
                           "startupProbe": _probe("/health"), "readinessProbe": _probe("/health")}]
    load_scenario({"inferenceService": isvc, **BASE})
    pred["containers"][0]["readinessProbe"] = _probe("/v2/health/ready")
    assert "no KServe v2 routes" in _problems({"inferenceService": isvc, **BASE})


def test_other_probe_kinds_and_servers_are_not_checked(scn):
    load_scenario(_scenario(scn, {"readinessProbe": {"exec": {"command": ["true"]}}}))
    isvc = scn.isvc(cc=1)
    isvc["spec"]["predictor"]["model"]["modelFormat"] = {"name": "pytorch"}   # TorchServe: not in the table
    isvc["spec"]["predictor"]["model"]["readinessProbe"] = _probe("/ping")
    load_scenario({"inferenceService": isvc, **BASE})


def test_a_runtime_of_the_users_own_is_not_checked(scn):
    """rev11-diff F1: `predictor.model.runtime` picks the ServingRuntime; KServe auto-selects by modelFormat only
    without it. A runtime that is not one of KServe's built-in ones (kserve config/runtimes) runs a server the
    table does not know."""
    for runtime in ("vllm-openai-runtime", "my-triton"):
        isvc = scn.isvc(cc=1)
        isvc["spec"]["predictor"]["model"].update({"runtime": runtime, "readinessProbe": _probe("/health")})
        load_scenario({"inferenceService": isvc, **BASE})


@pytest.mark.parametrize("runtime, good, bad", [("kserve-huggingfaceserver", "/v2/models/svc/ready", "/health"),
                                                ("kserve-vllmserver", "/health", "/v2/models/svc/ready"),
                                                ("kserve-tritonserver", "/v2/health/ready", "/health")])
def test_a_built_in_runtime_is_held_to_its_servers_routes(scn, runtime, good, bad):
    """kserve-vllmserver runs `python -m vllm.entrypoints.openai.api_server`
    (config/runtimes/kserve-vllmserver.yaml)."""
    isvc = scn.isvc(cc=1)
    isvc["spec"]["predictor"]["model"].update({"runtime": runtime, "readinessProbe": _probe(good)})
    load_scenario({"inferenceService": isvc, **BASE})
    isvc["spec"]["predictor"]["model"]["readinessProbe"] = _probe(bad)
    assert "readinessProbe.httpGet.path" in _problems({"inferenceService": isvc, **BASE})


def test_v2_health_ready_is_a_liveness_route_in_a_scenario(scn):
    """rev11-diff F7: on KServe's Python server /v2/health/ready answers 200 before the model is loaded."""
    assert "is a liveness route" in _problems(_scenario(scn, {"readinessProbe": _probe("/v2/health/ready")}))

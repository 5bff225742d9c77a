"""The gate's node group keeps images and models as a real one does (simulation/cluster.py): a service's image
on a node says nothing of another's, and with `modelCache.enabled: false` every pod downloads its model (KServe's
storage initializer into the pod's own emptyDir), as the stack's own `expected_load_s` counts."""

from __future__ import annotations

import pytest

from gate import _trials, cluster_profile, scenario_for
from gate.sequential import decide
from simulation import load_scenario, run_simulation
from stackconfig.schema import parse_stack_config

from tests.runtime_stack import TGI_IMAGE, chat_stack


def _parse(cfg: dict):
    return parse_stack_config(cfg, "p", "dev")


def test_cache_off_profile_has_no_node_cache():
    cfg = chat_stack()
    assert cluster_profile(_parse(cfg))["model_cache"] == "node"   # cache on: every pod a hit (ratio 1) anyway
    cfg["modelCache"] = {"enabled": False}
    profile = cluster_profile(_parse(cfg))
    assert profile["model_cache"] == "none" and profile["model_cache_hit_ratio"] == 0.0


def test_cache_off_every_scaled_up_pod_downloads_on_the_warm_node():
    """Step load: chat scales from 1 to 4 pods on its one warm 4-GPU node; each new pod downloads the model."""
    cfg = chat_stack(minReplicas=1, maxReplicas=4, containerConcurrency=2, slo={"p99LatencyS": 60},
                     workload={"kind": "step", "rate": 0.2, "to_rate": 6.0, "at_s": 60})
    cfg["modelCache"] = {"enabled": False}
    cfg["coldStart"] = {"downloadGBps": 0.5}
    c = _parse(cfg)
    sc = scenario_for(c, c.services[0]) | {"duration_s": 600}
    report = run_simulation(load_scenario(sc), seed=1).to_dict()
    assert report["cold_starts"] >= 2
    phases = report["cold_start_phases_mean_s"]
    assert phases["node_s"] == 0 and phases["image_pull_s"] == 0   # the warm node, which has chat's image
    download_gib = sc["model"].get("download_gib", sc["model"]["weights_gib"])
    assert phases["download_s"] == pytest.approx(download_gib * 2**30 / 0.5e9, rel=1e-4)


def test_scale_from_zero_pays_its_own_image_pull_beside_another_services_image():
    """TGI from zero lands on the node vLLM's chat holds: its 15 GiB image at 50 MB/s (322 s) is past its
    maxColdStartS (150 s), so the scaleFromZero verdict fails (it passed when the node's one image flag covered
    every image)."""
    cfg = chat_stack(minReplicas=1, maxReplicas=2)
    cfg["gpuNodeGroup"].update({"minSize": 0, "maxSize": 2})
    cfg["coldStart"] = {"imageGib": 15, "imagePullMBps": 50}
    cfg["services"].append({**cfg["services"][0], "name": "tgi", "minReplicas": 0, "allowScaleToZero": True,
                            "runtime": {"engine": "tgi", "image": TGI_IMAGE},
                            "workload": {"kind": "poisson", "rate": 0.2},
                            "slo": {"p99LatencyS": 400, "maxColdStartS": 150}})
    c = _parse(cfg)
    verdict = decide(_trials(c, ("scaleFromZero",)), c.gate, None)[("tgi", "scaleFromZero")]
    assert not verdict.passed
    assert verdict.report["cold_start_phases_mean_s"]["image_pull_s"] == pytest.approx(15 * 2**30 / 50e6, rel=1e-4)

"""Scenario builders shared by the simulation tests, offered as the `scn` fixture."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONV_TRACE = ROOT.parent / "shared" / "data" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"


def isvc(cc: int = 1, min_replicas: int | None = 1, max_replicas: int = 1, annotations: dict | None = None,
         gpus: int = 1, mode: str | None = None, **predictor) -> dict:
    ann = dict(annotations or {})
    if mode:
        ann["serving.kserve.io/deploymentMode"] = mode
    pred = {"containerConcurrency": cc, "maxReplicas": max_replicas,
            "model": {"modelFormat": {"name": "huggingface"}, "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}},
            **predictor}
    if min_replicas is not None:
        pred["minReplicas"] = min_replicas
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "svc", "annotations": ann}, "spec": {"predictor": pred}}


def mmck_scenario(lam: float, c: int, duration: float, *, depth_factor: int = 10, dist: str = "exponential") -> dict:
    """1 pod, autoscaling pinned (min = max = 1), CC = c, TBC 0 so the activator is out of the path."""
    return {
        "inferenceService": isvc(cc=c, annotations={"autoscaling.knative.dev/target-burst-capacity": "0"}),
        "workload": {"kind": "poisson", "rate": lam},
        "server": {"kind": "simple", "base_s": 1.0, "distribution": dist},
        "what_if": {"queue_depth_factor": depth_factor},
        "duration_s": duration,
        "warmup_s": duration * 0.02,
    }


def run(mapping: dict, seed: int = 1, base_dir: Path | None = None) -> dict:
    from simulation import load_scenario, run_simulation
    d = run_simulation(load_scenario(mapping, base_dir=base_dir or ROOT), seed=seed).to_dict()
    # Little's law, window form, on every run through this helper: no request lost or counted twice (one still
    # open at the horizon is answered `unanswered` there, simulation/horizon.py).
    assert d["littles_law"]["bookkeeping_rel_diff"] < 1e-6, d["littles_law"]
    return d


@pytest.fixture
def scn() -> SimpleNamespace:
    return SimpleNamespace(isvc=isvc, mmck_scenario=mmck_scenario, run=run, root=ROOT, conv_trace=CONV_TRACE)

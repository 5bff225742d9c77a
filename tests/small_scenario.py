"""A small scenario for tests that need a quick, real simulation run (the result cache, worker fingerprints)."""

from __future__ import annotations


def simple_service(name: str, isvc: str, replicas: int, rate: float, base_s: float, duration_s: float) -> dict:
    """`replicas` pinned pods (CC 1) of an exponential simple server under Poisson `rate` for `duration_s`."""
    return {
        "name": name,
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": isvc},
            "spec": {"predictor": {"minReplicas": replicas, "maxReplicas": replicas, "containerConcurrency": 1,
                                   "model": {"modelFormat": {"name": "sklearn"}}}}},
        "workload": {"kind": "poisson", "rate": rate},
        "server": {"kind": "simple", "base_s": base_s, "distribution": "exponential"},
        "duration_s": duration_s,
    }

"""How long a service's pods take to come up, and how long Pulumi and Knative wait for them.

A cold start on a GPU node: node provisioning (the cluster-autoscaler adds a node) + image pull + the service's
expected model load (weights from the cache at the storage's rate, engine init; `expected_load_s`), every prior at
its 95th percentile (a throughput at its 5th: `stackconfig.platform.COLD_START_QUANTILE`). Pods of one
rollout start in parallel, so this is also the time a new revision needs to reach its initial scale.
"""

from __future__ import annotations

import math

from simulation.autoscaler.config import DEFAULT_PROGRESS_DEADLINE_S, PROGRESS_DEADLINE_KEY
from stackconfig.platform import COLD_START_QUANTILE, slow_rate, slow_s
from stackconfig.schema import ServiceConfig, StackConfig
from validation.kubernetes import parse_duration

READY_MARGIN_S = 120  # webhook, revision creation, route programming


PERCENTILE = f"p{100 * COLD_START_QUANTILE:g}"


def _phases(cfg: StackConfig, svc: ServiceConfig) -> dict[str, float]:
    cold = cfg.cold_start
    return {"node provision": slow_s(cold.node_provision_s),
            "image pull": cold.image_gib * 2**30 / (slow_rate(cold.image_pull_mbps) * 1e6),
            "model load": svc.expected_load_s}


def cold_start_s(cfg: StackConfig, svc: ServiceConfig) -> float:
    """A new pod on a new node: provision + image pull + model load, each coldStart prior at its
    COLD_START_QUANTILE (stackconfig/platform.py), not its mean."""
    return sum(_phases(cfg, svc).values())


def cold_start_phases(cfg: StackConfig, svc: ServiceConfig) -> str:
    """`cold_start_s` term by term, for messages: "node provision 174 s + image pull 447 s + …"."""
    return " + ".join(f"{name} {s:.0f} s" for name, s in _phases(cfg, svc).items()) + f", each at its {PERCENTILE}"


def progress_deadline_s(svc: ServiceConfig) -> float:
    return parse_duration(svc.annotations.get(PROGRESS_DEADLINE_KEY)) or DEFAULT_PROGRESS_DEADLINE_S


def ready_timeout_s(cfg: StackConfig, svc: ServiceConfig) -> int:
    """How long `pulumi up` waits for the InferenceService to be Ready: twice the cold start, plus a margin,
    but never less than Knative's progress deadline (a revision still progressing is not yet a failure)."""
    return math.ceil(max(2 * cold_start_s(cfg, svc), progress_deadline_s(svc)) + READY_MARGIN_S)

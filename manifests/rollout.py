"""How long a service's pods take to come up, and how long Pulumi and Knative wait for them.

A cold start on a GPU node: node provisioning (the cluster-autoscaler adds a node) + image pull + the service's
expected model load (weights from the cache at the storage's rate, engine init; `expected_load_s`). Pods of one
rollout start in parallel, so this is also the time a new revision needs to reach its initial scale.
"""

from __future__ import annotations

import math

from simulation.autoscaler.config import DEFAULT_PROGRESS_DEADLINE_S, PROGRESS_DEADLINE_KEY
from stackconfig.schema import ServiceConfig, StackConfig
from validation.kubernetes import parse_duration

READY_MARGIN_S = 120  # webhook, revision creation, route programming


def cold_start_s(cfg: StackConfig, svc: ServiceConfig) -> float:
    """A new pod on a new node: provision + image pull + model load (the coldStart priors)."""
    cold = cfg.cold_start
    pull = cold.image_gib * 2**30 / (cold.image_pull_mbps * 1e6)
    return cold.node_provision_s + pull + svc.expected_load_s


def progress_deadline_s(svc: ServiceConfig) -> float:
    return parse_duration(svc.annotations.get(PROGRESS_DEADLINE_KEY)) or DEFAULT_PROGRESS_DEADLINE_S


def ready_timeout_s(cfg: StackConfig, svc: ServiceConfig) -> int:
    """How long `pulumi up` waits for the InferenceService to be Ready: twice the cold start, plus a margin,
    but never less than Knative's progress deadline (a revision still progressing is not yet a failure)."""
    return math.ceil(max(2 * cold_start_s(cfg, svc), progress_deadline_s(svc)) + READY_MARGIN_S)

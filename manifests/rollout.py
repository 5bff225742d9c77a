"""How long a service's pods take to come up, and how long Pulumi and Knative wait for them.

A cold start on a GPU node: node provisioning (the cluster-autoscaler adds a node) + image pull + model load
(download unless cached, weights to the GPU, engine init). The priors vary (`coldStart`), so the figure is a
high quantile, never the mean: a new revision is Ready once all its first pods are (Knative: max(min-scale,
initial-scale)), so it is the time by which the slowest of them is Ready in COLD_START_QUANTILE (95 %) of rollouts.
The pods sit on ceil(pods × GPUs / GPUs per node) new nodes, each with its own launch and pull, and every pod loads
on its own: with n independent draws the slowest stays within a level L in a share L^n of rollouts, so node and
pull are taken at 0.95^(1/nodes), the load at 0.95^(1/pods) (one pod: the p95), every phase at that level at once
(as if one congested network slowed them all together; above the quantile when they are independent).
The pods load at once from the model cache (at the first `pulumi up` with every other service's first pods:
`stackconfig.services.readers_together`), so each reads at most an equal share of the cache's file system read
throughput (`modelCache.throughputMode`; stackconfig/platform.py `load_gbps`): ten pods on an EFS file system in
Bursting mode (300 MiB/s of reads) take ten times one pod's 300 MiB/s load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulation.autoscaler.config import DEFAULT_PROGRESS_DEADLINE_S, PROGRESS_DEADLINE_KEY
from simulation.autoscaler.config import progress_deadline_s as knative_progress_deadline_s
from stackconfig import platform
from stackconfig.platform import (COLD_START_QUANTILE, cache_read_mib_s, expected_load_s, load_gbps, slow_rate,
                                  slow_s)
from stackconfig.schema import ServiceConfig, StackConfig
from stackconfig.services import readers_together

READY_MARGIN_S = 120  # webhook, revision creation, route programming
PERCENTILE = f"p{100 * COLD_START_QUANTILE:g}"


def initial_scale(svc: ServiceConfig, cluster_default: int = 1) -> int:
    """Pods a new Knative revision starts with (`stackconfig.platform.initial_scale`)."""
    return platform.initial_scale(svc.min_replicas, svc.annotations, cluster_default)


@dataclass(frozen=True)
class ColdStart:
    """The first pods of a revision on new nodes: each phase's figure and the quantile level it was taken at."""

    pods: int
    nodes: int
    node_s: float
    pull_s: float
    load_s: float
    node_level: float
    pod_level: float
    shared: str = ""   # how the pods share the model cache's reads, when that bounds their load ("" when not)

    @property
    def total_s(self) -> float:
        return self.node_s + self.pull_s + self.load_s

    def describe(self) -> str:
        """"node provision 174 s + image pull 447 s + model load 73 s, each at its p95" (levels as used)."""
        pn, pp = (f"p{100 * lv:.3g}" for lv in (self.node_level, self.pod_level))
        phases = f"node provision {self.node_s:.0f} s + image pull {self.pull_s:.0f} s"
        load = f"model load {self.load_s:.0f} s" + (f" ({self.shared})" if self.shared else "")
        if pn == pp:
            return f"{phases} + {load}, each at its {pn}"
        return f"{phases} at their {pn} + {load} at its {pp}"


def first_pods(cfg: StackConfig, svc: ServiceConfig) -> int:
    """Pods that must all be Ready: a Knative revision's initial scale, a Deployment's minReplicas (at least 1)."""
    return platform.first_pods(svc.deployment_mode, svc.min_replicas, svc.annotations,
                               cfg.knative.autoscaler.initial_scale)


def cold_start(cfg: StackConfig, svc: ServiceConfig, pods: int | None = None, first_deploy: bool = False,
               quantile: float = COLD_START_QUANTILE) -> ColdStart:
    """The time by which `pods` new pods (default `first_pods`) are all Ready in `quantile` of cases (by default
    COLD_START_QUANTILE; 0.5 for a typical one): in a rollout of `svc` alone, or at the first `pulumi up`
    (`first_deploy`), where the first pods of every service read the model cache at once
    (`stackconfig.services.readers_together`)."""
    cold, ng = cfg.cold_start, cfg.node_group
    pods = pods or first_pods(cfg, svc)
    others = readers_together(cfg.services, svc, cfg.knative.autoscaler.initial_scale,
                                       first_deploy) - first_pods(cfg, svc)
    readers = pods + others   # the other services' first pods read with these at the first `pulumi up`
    nodes = max(1, math.ceil(pods * svc.gpus / ng.gpus_per_node))
    node_level, pod_level = quantile ** (1 / nodes), quantile ** (1 / pods)
    pull = cold.image_gib * 2**30 / (slow_rate(cold.image_pull_mbps, node_level) * 1e6)
    mc = cfg.model_cache
    # The pods load at once (as if their nodes and pulls ended together: the bound), each reading the weights
    # from the cache's file system, whose read throughput they share (stackconfig.platform.load_gbps).
    load = expected_load_s(svc.model, cold, mc.enabled, load_gbps(cold, mc, readers), pod_level,
                           storage_uri=svc.storage_uri)
    shared = ""
    if mc.enabled and load > expected_load_s(svc.model, cold, True, load_gbps(cold, mc), pod_level,
                                             storage_uri=svc.storage_uri):
        shared = (f"{readers} pods share the model cache's {cache_read_mib_s(mc):g} MiB/s of reads: "
                  f"modelCache.throughputMode {mc.throughput_mode}")
    return ColdStart(pods, nodes, slow_s(cold.node_provision_s, node_level), pull, load, node_level, pod_level,
                     shared)


def cold_start_s(cfg: StackConfig, svc: ServiceConfig, first_deploy: bool = False) -> float:
    """`cold_start(cfg, svc, first_deploy=...).total_s`: the first pods all Ready, in 19 rollouts of 20."""
    return cold_start(cfg, svc, first_deploy=first_deploy).total_s


def progress_deadline_s(svc: ServiceConfig) -> float:
    """The new revision's progress deadline: its `serving.knative.dev/progress-deadline` read with the simulated
    KPA's own reader (simulation/autoscaler/config.py), else Knative's 600 s, which the InferenceService then
    carries (manifests/inference_service.py), so the gate and the simulation read this same number from it."""
    seconds, _ = knative_progress_deadline_s(svc.annotations.get(PROGRESS_DEADLINE_KEY))  # malformed: refused earlier
    return seconds or DEFAULT_PROGRESS_DEADLINE_S


def ready_timeout_s(cfg: StackConfig, svc: ServiceConfig) -> int:
    """How long `pulumi up` waits for the InferenceService to be Ready: twice the cold start, plus a margin,
    but never less than Knative's progress deadline (a revision still progressing is not yet a failure). The cold
    start of the first `pulumi up`, where every service's first pods share the cache's reads: a rollout of one
    service shares them with fewer and is done sooner."""
    return math.ceil(max(2 * cold_start_s(cfg, svc, first_deploy=True), progress_deadline_s(svc)) + READY_MARGIN_S)

"""Does a rollout fit? A static check of every service's next revision against the node group (issue 8 §5).

Knative keeps the old revision serving until the new one has `max(min-scale, initial-scale)` Ready pods
(knative/serving `pkg/reconciler/autoscaling/kpa/scaler.go` initial scale; the route moves only to a Ready
revision), so during a rollout the GPUs must hold: the old revision at its expected load + the new revision at
its initial scale + every other service at its minimum. Standard mode rolls a Deployment with the default 25 %
surge (`maxSurge`), so the surge pods must fit beside the old ones. The new pods must also become Ready within
Knative's progress deadline (`serving.knative.dev/progress-deadline`, default 600 s), or the revision fails: checked
against the 95th percentile of the time the new revision's first pods are all Ready (each coldStart prior at the
quantile that makes the slowest of them a p95; manifests/rollout.py), not the mean, since a cold start varies
(node launch, registry and download throughput).

Expected load of the old revision: its initial scale (what the operator sized for the expected traffic) or, when
the gate simulated the service, the simulated mean replicas if higher. Simplification: a simulated stress
rollout (gate scenarios) catches what this bound does not, e.g. a burst during the rollout.
"""

from __future__ import annotations

import math
from typing import Mapping

from manifests.rollout import PERCENTILE, cold_start, initial_scale, progress_deadline_s
from simulation.autoscaler.config import DEFAULT_PROGRESS_DEADLINE_S, PROGRESS_DEADLINE_KEY
from stackconfig.platform import COLD_START_QUANTILE
from stackconfig.schema import ServiceConfig, StackConfig
from validation.errors import Problem

DEPLOYMENT_MAX_SURGE = 0.25  # apps/v1 Deployment RollingUpdate default maxSurge


def rollout_problems(cfg: StackConfig, simulated_replicas: Mapping[str, float] | None = None) -> list[Problem]:
    """One problem per service whose rollout does not fit the node group or its progress deadline."""
    capacity, problems = cfg.node_group.gpu_capacity, []
    for i, svc in enumerate(cfg.services):
        others = sum(o.min_replicas * o.gpus for o in cfg.services if o is not svc)
        initial = initial_scale(svc, cfg.knative.autoscaler.initial_scale)
        expected = max(initial, math.ceil((simulated_replicas or {}).get(svc.name, 0.0)))
        if svc.deployment_mode == "Knative":
            new = initial
            how = (f"old revision at its expected load {expected} + new revision at its initial scale {new} "
                   f"(max(minReplicas, initial-scale))")
        else:
            expected = max(svc.min_replicas, math.ceil((simulated_replicas or {}).get(svc.name, 0.0)))
            new = math.ceil(expected * DEPLOYMENT_MAX_SURGE)
            how = f"{expected} running + {new} surge pod(s) (Deployment maxSurge 25 %)"
        needed = (expected + new) * svc.gpus + others
        if needed > capacity:
            problems.append(Problem(f"services[{i}]", svc.name, (
                f"expected a rollout that fits the node group: {how}, × {svc.gpus} GPU(s), + the other services' "
                f"minimums {others} = {needed} GPUs > {capacity} (gpuNodeGroup.maxSize {cfg.node_group.max_size} × "
                f"{cfg.node_group.gpus_per_node}); the new pods stay Pending and the rollout stalls. Raise maxSize "
                f"to {math.ceil(needed / cfg.node_group.gpus_per_node)} or lower initial-scale/minReplicas")))
        cold = cold_start(cfg, svc) if svc.deployment_mode == "Knative" else None
        if cold is not None and cold.total_s > progress_deadline_s(svc):
            which = "a new pod" if cold.pods == 1 else f"the new revision's {cold.pods} pods (on {cold.nodes} new " \
                                                         f"node{'s' if cold.nodes > 1 else ''}) all Ready"
            problems.append(Problem(f"services[{i}].annotations.{PROGRESS_DEADLINE_KEY}",
                                    svc.annotations.get(PROGRESS_DEADLINE_KEY, f"{DEFAULT_PROGRESS_DEADLINE_S:g}s"), (
                f"expected at least the {PERCENTILE} cold start of {which}, {cold.total_s:.0f} s "
                f"({cold.describe()}), or a slow rollout (1 in {round(1 / (1 - COLD_START_QUANTILE))} when "
                "the phases are slow together) outlasts it and Knative fails the revision before it is Ready. Raise "
                "the deadline, or shorten the cold start (a warm node: gpuNodeGroup.minSize; a smaller image; "
                "the model cache)")))
    return problems


def rollout_failure(cfg: StackConfig, simulated_replicas: Mapping[str, float] | None = None) -> str | None:
    problems = rollout_problems(cfg, simulated_replicas)
    if not problems:
        return None
    return ("rollout capacity: the next rollout would stall:\n"
            + "\n".join(f"  - {cfg.project}:{p}" for p in problems))

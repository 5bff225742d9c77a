"""Does what can land on one GPU node fit its root volume (`gpuNodeGroup.diskSizeGib`)?

Without the model cache (or for a source it does not hold) KServe's storage initializer downloads each pod's model
into `kserve-provision-location`, an emptyDir without a size limit (kserve `pkg/utils/storage.go`), so on the
node's root volume beside the container images; two pods of one model hold two copies. The kubelet of the EKS
AMIs evicts pods once less than 10 % of that file system is free (nodeadm `internal/kubelet/config.go`
evictionHard `nodefs.available: 10%`: DiskPressure), and a download that outgrows it fails with ENOSPC.

What can land on one node: any mix of the services' pods the node's GPUs hold, at most 2 × maxReplicas of a
service (a Knative rollout runs the new revision beside the old; a Deployment surges), the worst mix found by a
small knapsack over GPUs. Each pod of a downloading service adds what its download writes (`catalog.Model.
download_bytes`: the weights, or for an hf:// source the whole repository, every file of which the initializer
fetches, so a repository with a second copy, e.g. meta-llama's `original/*.pth`, takes about twice the weights);
each service adds its runtime image once. Allowances (simplifications, stated): an image takes
`IMAGE_UNPACK_FACTOR` × `coldStart.imageGib` unpacked (containerd on the EKS AMIs keeps only unpacked layers,
`discard_unpacked_layers = true`); the OS, NVIDIA driver, logs and the cluster's system images take
`SYSTEM_GIB` (the AL2023 AMI's whole default root volume, templates/al2023 `launch_block_device_mappings_volume_size`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from manifests.model_cache import cache_uri
from stackconfig.schema import ServiceConfig, StackConfig
from validation.errors import Problem

SYSTEM_GIB = 20.0
IMAGE_UNPACK_FACTOR = 2.0
EVICTION_FREE = 0.10  # kubelet evictionHard nodefs.available on the EKS AMIs


@dataclass(frozen=True)
class _Mix:
    gib: float = 0.0
    pods: tuple[tuple[int, int], ...] = ()  # (service index, pods of it on the node)


def downloads_weights(cfg: StackConfig, svc: ServiceConfig) -> bool:
    """Whether the service's pods download their model into the pod (not read from a PVC)."""
    return not cache_uri(cfg, svc).startswith("pvc://")


def _pod_gib(cfg: StackConfig, svc: ServiceConfig) -> float:
    return svc.model.download_gib(svc.storage_uri) if downloads_weights(cfg, svc) else 0.0


def _download(cfg: StackConfig, svc: ServiceConfig) -> str:
    gib = _pod_gib(cfg, svc)
    if gib > svc.model.weights_gib:
        return f", {gib:.1f} GiB each: its whole hf:// repository, {svc.model.weights_gib:.1f} GiB of weights)"
    return f", {gib:.1f} GiB of weights each)"


def worst_mix(cfg: StackConfig) -> _Mix:
    """The most disk any mix of pods one node's GPUs can hold takes (downloads, plus each service's image once)."""
    gpus, image = cfg.node_group.gpus_per_node, IMAGE_UNPACK_FACTOR * cfg.cold_start.image_gib
    best = [_Mix()] * (gpus + 1)  # best[g]: the largest mix using at most g GPUs
    for i, svc in enumerate(cfg.services):
        if not svc.gpus:
            continue
        most = min(gpus // svc.gpus, 2 * svc.max_replicas)
        nxt = list(best)
        for g in range(gpus + 1):
            for k in range(1, most + 1):
                if k * svc.gpus > g:
                    break
                base = best[g - k * svc.gpus]
                mix = _Mix(base.gib + image + k * _pod_gib(cfg, svc), base.pods + ((i, k),))
                if mix.gib > nxt[g].gib:
                    nxt[g] = mix
        best = nxt
    return best[gpus]


def root_disk_problems(cfg: StackConfig) -> list[Problem]:
    ng = cfg.node_group
    mix = worst_mix(cfg)
    need = SYSTEM_GIB + mix.gib
    usable = ng.disk_size_gib * (1 - EVICTION_FREE)
    if need <= usable:
        return []
    image = IMAGE_UNPACK_FACTOR * cfg.cold_start.image_gib
    pods = ", ".join(
        f"{k} × {cfg.services[i].name} ({cfg.services[i].model.name}"
        + (_download(cfg, cfg.services[i]) if downloads_weights(cfg, cfg.services[i]) else ", read from its PVC)")
        for i, k in mix.pods)
    weights = sum(k * _pod_gib(cfg, cfg.services[i]) for i, k in mix.pods)
    minimum = math.ceil(need / (1 - EVICTION_FREE))
    parts = [f"{weights:.0f} GiB of model downloads (modelCache.enabled is false: KServe's storage initializer "
             "downloads each pod's model into a sizeless emptyDir on this volume)"] if weights else []
    parts += [f"{len(mix.pods)} runtime image{'s' if len(mix.pods) > 1 else ''} at {image:g} GiB unpacked "
              f"({IMAGE_UNPACK_FACTOR:g} × coldStart.imageGib)", f"{SYSTEM_GIB:g} GiB for the OS and system images"]
    return [Problem("gpuNodeGroup.diskSizeGib", ng.disk_size_gib, (
        f"expected at least {minimum} GiB: one {ng.instance_types[0]} node can hold {pods}, which take "
        f"{need:.0f} GiB = " + " + ".join(parts) + f"; the kubelet evicts pods (DiskPressure) below "
        f"{EVICTION_FREE:.0%} free, so {ng.disk_size_gib} GiB holds {usable:.0f} GiB. Raise gpuNodeGroup.diskSizeGib"
        + (", or enable the model cache (modelCache.enabled: true)" if weights else ""))
    )]

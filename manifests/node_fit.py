"""Does every pod fit the nodes it is meant for? Requests against allocatable, per instance type of the group.

For each instance type of the GPU node group: a service's pod (its CPU and memory requests, plus Knative's
queue-proxy sidecar in Knative mode) and every DaemonSet that runs on the node must fit the node's allocatable
(catalog/allocatable.py: the kernel's MemTotal, not the nominal memory, less kube-reserved and eviction); and as
many of the service's pods as the node has GPUs for must fit together, or GPUs sit idle that the capacity maths
and the gate count as usable. Mixed instance types must share one shape: the
cluster-autoscaler builds its node template from the first type and assumes the rest match (kubernetes/autoscaler
`cluster-autoscaler/cloudprovider/aws/README.md`, "Using Mixed Instances Policies and Spot Instances").
"""

from __future__ import annotations

from catalog.allocatable import VM_MEMORY_OVERHEAD, allocatable, cpu_millis, quantity
from manifests.device_plugin import device_plugin_daemonset
from manifests.model_cache import model_cache_daemonset
from stackconfig.schema import StackConfig
from validation.errors import Problem

QUEUE_PROXY_CPU_MILLIS = 25  # knative/serving pkg/deployment/config.go: queue-sidecar-cpu-request default 25m
GIB = 2**30


def _requests(daemonset: dict) -> tuple[int, float]:
    containers = daemonset["spec"]["template"]["spec"]["containers"]
    cpu = sum(cpu_millis(c["resources"]["requests"].get("cpu", "0")) for c in containers)
    return cpu, sum(quantity(c["resources"]["requests"].get("memory", "0")) for c in containers)


def daemonset_requests(cfg: StackConfig) -> tuple[int, float]:
    """CPU millicores and memory bytes the DaemonSets take on every GPU node."""
    ng = cfg.node_group
    cpu, mem = cpu_millis(ng.other_daemonsets_cpu), quantity(ng.other_daemonsets_memory)
    own = ([device_plugin_daemonset(cfg)] if cfg.deploys_device_plugin else []) + (
        [model_cache_daemonset(cfg)] if cfg.model_cache.enabled else [])
    for ds in own:
        c, m = _requests(ds)
        cpu, mem = cpu + c, mem + m
    return cpu, mem


def node_fit_problems(cfg: StackConfig) -> list[Problem]:
    ng, catalog = cfg.node_group, cfg.catalog
    types = [catalog.instances[t] for t in ng.instance_types if t in catalog.instances]
    problems = []
    first = types[0]
    for other in types[1:]:
        if (other.vcpus, other.memory_gib) != (first.vcpus, first.memory_gib):
            problems.append(Problem("gpuNodeGroup.instanceTypes", ng.instance_types, (
                f"expected instance types of one shape: {other.name} has {other.vcpus} vCPU / {other.memory_gib} GiB "
                f"but {first.name} {first.vcpus} vCPU / {first.memory_gib} GiB, and the cluster-autoscaler sizes "
                f"new nodes from the first type only (it adds nodes a pod cannot use, or none it could)")))
    ds_cpu, ds_mem = daemonset_requests(cfg)
    for inst in types:
        alloc = allocatable(inst)
        free_cpu, free_mem = alloc.cpu_millis - ds_cpu, alloc.memory_bytes - ds_mem
        for i, svc in enumerate(cfg.services):
            pod_cpu = cpu_millis(svc.cpu) + (QUEUE_PROXY_CPU_MILLIS if svc.deployment_mode == "Knative" else 0)
            pod_mem = quantity(svc.memory)
            wanted = max(1, inst.gpus // svc.gpus)
            fit = min(free_cpu // pod_cpu if pod_cpu else wanted, int(free_mem // pod_mem) if pod_mem else wanted)
            if fit >= wanted:
                continue
            sidecar = f" + queue-proxy {QUEUE_PROXY_CPU_MILLIS}m" if svc.deployment_mode == "Knative" else ""
            offer = (f"a {inst.name} offers {alloc.cpu_millis}m CPU / {alloc.memory_bytes / GIB:.1f} GiB allocatable "
                     f"(its {inst.memory_gib} GiB less {VM_MEMORY_OVERHEAD:.0%} the kernel keeps, kube-reserved and "
                     f"eviction), "
                     f"{free_cpu}m / {free_mem / GIB:.1f} GiB after the DaemonSets' {ds_cpu}m / {ds_mem / GIB:.1f} GiB")
            need = f"the pod requests cpu {svc.cpu}{sidecar} and memory {svc.memory}"
            consequence = ("so it never schedules (Pending for ever)" if fit < 1 else
                           f"so only {fit} of the {wanted} pods its GPUs could hold fit, and the other GPUs sit idle")
            problems.append(Problem(f"services[{i}].resources", {"cpu": svc.cpu, "memory": svc.memory},
                                    f"expected requests that fit the node ({svc.name}): {need}; {offer}; "
                                    f"{consequence}"))
    return problems

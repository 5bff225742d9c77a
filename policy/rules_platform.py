"""Rules over the platform: images, the GPU node group, the device plugin, the model cache, Kubernetes hygiene."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Iterator

from policy.resources import (ADVISORY, Context, MANDATORY, NODE_GROUP_TYPE, RECOMMENDED_LABELS, Resource, _list, _map,
                              containers, fmt, gpus_per_node, has_pods, is_device_plugin, is_gpu_isvc,
                              is_gpu_node_group, is_kubernetes, is_model_cache_daemonset, is_model_cache_pvc,
                              is_isvc, isvc_gpus, metadata, node_group_capacity, node_group_taints, num,
                              pod_spec, predictor, _args)
from policy.bounds import replica_bounds
from policy.registry import rule
from validation.kubernetes import GPU_RESOURCE, image_pinned


# --- Images (every workload) ------------------------------------------------------------------------------------
@rule("image-tag-pinned", MANDATORY, "Every container image has a pinned tag or digest (no latest, no missing tag)",
      "001 §6; 004 §6", has_pods)
def _image_pinned(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        image = c.get("image")
        if image is not None and not image_pinned(str(image)):
            yield (f"{res.label}: container {c.get('name') or 'model'!s} uses image {image!r} without a pinned tag, "
                   "so nodes pull different builds (and re-pull on every cold start). Pin a version tag or "
                   "@sha256 digest.")


# --- Node group -------------------------------------------------------------------------------------------------
def _is_gpu_ng(res: Resource) -> bool:
    return res.type == NODE_GROUP_TYPE and is_gpu_node_group(res)


@rule("nodegroup-gpu-taint", MANDATORY, "The GPU node group carries the nvidia.com/gpu NoSchedule taint",
      "001 §7, §10-3", _is_gpu_ng)
def _ng_taint(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(t["key"] == GPU_RESOURCE and t["effect"] in ("NoSchedule", "NoExecute")
               for t in node_group_taints(res)):
        yield (f"{res.label}: no {GPU_RESOURCE} taint, so CPU pods fill the expensive GPU nodes and block GPU "
               f"pods. Add taints [{{key: {GPU_RESOURCE}, value: \"true\", effect: NO_SCHEDULE}}].")


@rule("nodegroup-desired-size-ignored", MANDATORY,
      "Pulumi ignores scalingConfig.desiredSize (the cluster autoscaler owns it)", "004 §4; 001 §10-3", _is_gpu_ng)
def _ng_desired(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(p in ("scalingConfig.desiredSize", "scalingConfig") for p in res.ignore_changes):
        yield (f"{res.label}: desiredSize is managed by Pulumi, so every `pulumi up` resets the node count the "
               "cluster autoscaler chose (draining GPU nodes under load). Add "
               "ignore_changes=[\"scalingConfig.desiredSize\"] to the NodeGroup's resource options.")


def _services(ctx: Context) -> list[Resource]:
    return [r for r in ctx.resources if is_gpu_isvc(r)]


@rule("nodegroup-capacity", MANDATORY,
      "minSize <= maxSize, and maxSize × GPUs per node covers every GPU service's minReplicas",
      "001 §10-2, §10-3; 004 §6", _is_gpu_ng, stack=True)
def _ng_capacity(res: Resource, ctx: Context) -> Iterator[str]:
    scaling = _map(res.props.get("scalingConfig"))
    min_s, max_s = num(scaling.get("minSize")), num(scaling.get("maxSize"))
    if min_s is not None and max_s is not None and min_s > max_s:
        yield f"{res.label}: minSize {fmt(min_s)} > maxSize {fmt(max_s)}. Set minSize <= maxSize."
    capacity, per_node = node_group_capacity(res), gpus_per_node(res)
    if capacity is None:
        return
    needed = sum((1 if replica_bounds(s, ctx).min is None else replica_bounds(s, ctx).min) * isvc_gpus(s)
                 for s in _services(ctx))
    if needed > capacity:
        yield (f"{res.label}: the services' minReplicas need {fmt(needed)} GPUs but maxSize {fmt(max_s)} × "
               f"{per_node} GPU(s) per node = {capacity}; warm replicas stay Pending. Raise maxSize to at least "
               f"{-(-int(needed) // per_node)} or lower minReplicas.")


@rule("nodegroup-fits-peak", ADVISORY,
      "maxSize × GPUs per node covers every GPU service at maxReplicas at once", "001 §10-2", _is_gpu_ng, stack=True)
def _ng_peak(res: Resource, ctx: Context) -> Iterator[str]:
    capacity, per_node = node_group_capacity(res), gpus_per_node(res)
    if capacity is None:
        return
    peak = sum((replica_bounds(s, ctx).max or 0) * isvc_gpus(s) for s in _services(ctx))
    if peak > capacity:
        yield (f"{res.label}: all services at maxReplicas need {fmt(peak)} GPUs but the node group holds "
               f"{capacity}; simultaneous spikes leave pods Pending. Raise maxSize to {-(-int(peak) // per_node)} "
               "or lower some maxReplicas.")


# --- Device plugin ----------------------------------------------------------------------------------------------
@rule("device-plugin-priority", MANDATORY, "The NVIDIA device plugin runs at priorityClassName system-node-critical",
      "001 §7", is_device_plugin)
def _dp_priority(res: Resource, ctx: Context) -> Iterator[str]:
    value = pod_spec(res).get("priorityClassName")
    if value != "system-node-critical":
        yield (f"{res.label}: priorityClassName is {value or 'unset'}, so under node pressure the plugin can be "
               "evicted and the node stops advertising nvidia.com/gpu. Set priorityClassName: system-node-critical.")


@rule("device-plugin-not-privileged", MANDATORY, "The NVIDIA device plugin runs no privileged container",
      "NVIDIA k8s-device-plugin static manifest", is_device_plugin)
def _dp_privileged(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        if _map(c.get("securityContext")).get("privileged") is True:
            yield (f"{res.label}: container {c.get('name')} is privileged; the plugin only needs the kubelet "
                   "socket in /var/lib/kubelet/device-plugins. Remove securityContext.privileged (use "
                   "allowPrivilegeEscalation: false, capabilities.drop [ALL]).")


# --- Model cache ------------------------------------------------------------------------------------------------
@rule("model-cache-pvc-protected", MANDATORY, "The model-cache PVC is protected from deletion (protect=True)",
      "001 §6, §10-4", is_model_cache_pvc)
def _pvc_protected(res: Resource, ctx: Context) -> Iterator[str]:
    if not res.protect:
        yield (f"{res.label}: not protected, so a destroy or replace deletes hundreds of GB of cached weights and "
               "every replica re-downloads its model (long cold starts). Add protect=True (and "
               "retain_on_delete=True) to its resource options.")


@rule("model-cache-readiness", MANDATORY,
      "The model-cache prefetch DaemonSet has a readinessProbe that passes only once downloads are complete",
      "001 §6, §4", is_model_cache_daemonset)
def _cache_ready(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(isinstance(c.get("readinessProbe"), Mapping) for c in containers(res)):
        yield (f"{res.label}: no readinessProbe, so the cache looks ready while models are still downloading. "
               "Add a readinessProbe (exec: test -f /models/<model>/.complete) that fails until every download "
               "has finished.")


# --- Model sources ---------------------------------------------------------------------------------------------
HF_SOURCE = re.compile(r"hf://[\w.-]+/[\w.-]+(?::[\w.-]+)?")
COMMIT = re.compile(r"[0-9a-f]{40}")   # a Hugging Face commit id; a branch or tag name can move


def model_sources(res: Resource) -> list[str]:
    """The model URIs a resource downloads: an InferenceService's storageUri, the model-cache prefetch's list."""
    if is_isvc(res):
        pred = predictor(res)
        custom = [e.get("value") for c in _list(pred.get("containers"))[:1] for e in _list(_map(c).get("env"))
                  if _map(e).get("name") == "STORAGE_URI"]  # a custom predictor (kserve predictor_custom.go)
        return [u for u in (_map(pred.get("model")).get("storageUri"), pred.get("storageUri"), *custom)
                if isinstance(u, str)]
    return [m.group(0) for c in containers(res) for a in _args(c) for m in HF_SOURCE.finditer(a)]


def _downloads_models(res: Resource) -> bool:
    return is_isvc(res) or is_model_cache_daemonset(res)


@rule("model-revision-pinned", MANDATORY,
      "In prod, every hf:// model names its commit (hf://<owner>/<model>:<40-hex commit>)",
      "001 §6; kserve_storage _download_hf (revision after ':')", _downloads_models, stack=True)
def _revision_pinned(res: Resource, ctx: Context) -> Iterator[str]:
    """KServe's storage initializer passes the part after ':' to `snapshot_download(revision=...)`; without it,
    the repository's default branch as it is at download time."""
    if ctx.environment != "prod":
        return
    for uri in model_sources(res):
        if not uri.startswith("hf://"):
            continue
        repo, _, revision = uri[len("hf://"):].partition(":")
        if not COMMIT.fullmatch(revision):
            named = f"names the revision {revision!r}, a branch or tag that can move" if revision else \
                "names no revision"
            yield (f"{res.label}: {uri} {named}, so every download takes that revision as it is that day: a pod "
                   "that starts after the owner pushes serves other weights, tokenizer or chat template than the "
                   "ones you validated, and the model cache keeps whichever copy it fetched first. Pin a commit: "
                   f"hf://{repo}:<40-hex commit> (the repository's history on Hugging Face).")


# --- General Kubernetes hygiene ---------------------------------------------------------------------------------
@rule("k8s-resources", MANDATORY, "Every container sets cpu and memory requests and limits",
      "000 §2, §7 (CPU OOMKilled)", has_pods)
def _resources(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        r = _map(c.get("resources"))
        missing = [f"{part}.{k}" for part in ("requests", "limits") for k in ("cpu", "memory")
                   if _map(r.get(part)).get(k) in (None, "")]
        if missing:
            yield (f"{res.label}: container {c.get('name') or 'model'!s} has no {', '.join(missing)}, so it is "
                   "BestEffort/Burstable: evicted first and free to starve its neighbours. Set resources.requests "
                   "and resources.limits for cpu and memory.")


@rule("k8s-no-privilege-escalation", MANDATORY, "Every container sets securityContext.allowPrivilegeEscalation: false",
      "Pod Security Standards (restricted)", has_pods)
def _no_escalation(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        if _map(c.get("securityContext")).get("allowPrivilegeEscalation") is not False:
            yield (f"{res.label}: container {c.get('name') or 'model'!s} does not set "
                   "securityContext.allowPrivilegeEscalation: false. Set it (with capabilities.drop: [ALL]).")


@rule("k8s-no-host-network", MANDATORY, "No pod uses hostNetwork, hostPID or hostIPC",
      "Pod Security Standards (baseline)", has_pods)
def _no_host(res: Resource, ctx: Context) -> Iterator[str]:
    spec = pod_spec(res)
    used = [k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    if used:
        yield (f"{res.label}: sets {', '.join(used)}: true, sharing the node's namespaces with the pod. Remove "
               f"{' / '.join(used)} (the GPU and device-plugin socket need neither).")


@rule("k8s-recommended-labels", ADVISORY,
      "Every Kubernetes object carries app.kubernetes.io/{name,instance,component,part-of,managed-by}",
      "kubernetes.io recommended labels",
      # A *Patch resource sets a few keys of an object someone else owns (knative-serving/config-features): its
      # labels stay the owner's.
      lambda r: is_kubernetes(r) and not r.type.startswith("pulumi:") and not r.type.endswith("Patch"))
def _labels(res: Resource, ctx: Context) -> Iterator[str]:
    labels = _map(metadata(res).get("labels"))
    missing = [k for k in RECOMMENDED_LABELS if not labels.get(k)]
    if missing:
        yield (f"{res.label}: missing the recommended labels {', '.join(missing)}. Add them to metadata.labels "
               "(manifests.common.labels does).")

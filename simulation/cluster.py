"""GPU nodes: placement, node provisioning, per-node image/model caches and GPU-hour accounting.

A node keeps what its pods brought, by name, as the kubelet and KServe key it:
- Images by reference (`image_ref`): the kubelet's image manager pulls an image for a container only when the
  node's runtime does not have that image already (kubernetes `pkg/kubelet/images/image_manager.go`
  `EnsureImageExists`, under the default IfNotPresent policy of a tagged image), and keeps it afterwards (image
  garbage collection, on disk pressure only, is not modelled). So a pod of another service on the node pulls
  its own image: one image on the node says nothing about another. Pods that start while a pull of their image is
  under way wait for that pull (the container runtime fetches a layer once per node), not for a second one.
  Pulls of different images run side by side, each at its own drawn rate (EKS nodes pull in parallel:
  amazon-eks-ami `nodeadm/internal/kubelet/config.go` sets serializeImagePulls false; their sharing of the
  node's network is not modelled).
- Model weights by storage URI (`model_ref`), with `model_cache: node` only: a node-local cache, as KServe's
  LocalModelCache node agent (`pkg/controller/v1alpha1/localmodelnode`) downloads each model once per node, keyed
  by its storageUri. The stack's own cache (components/model_cache.py) is one shared PVC that its prefetch
  DaemonSet fills with every model before any service starts: the gate reads it as a hit for every pod
  (`model_cache_hit_ratio` 1). With `model_cache: none` every pod downloads into its own emptyDir, whatever the
  node holds: KServe's pod webhook adds the storage-initializer init container to each predictor pod
  (`pkg/webhook/admission/pod/storage_initializer_injector.go`) writing to an emptyDir volume
  (`pkg/utils/storage.go` `AddModelMount`), which goes with the pod.
A warm node (ready at t = 0) holds the image and weights of each pod that starts on it
(`image_cached_on_warm_nodes`, `model_cached_on_warm_nodes`); a warm node that starts with no pod (the node
group's minimum beyond what the first pods need) holds those of every service of the run, as one pre-pulled
for the stack.

Placement is first-fit over nodes in creation order, preferring nodes that are already ready (the
kube-scheduler's scoring is richer; a simplification). A pod needs `gpus` GPUs (a pod without a GPU limit
takes one slot). No free slot and fewer than `max_nodes` nodes → a node is provisioned (Cluster Autoscaler /
Karpenter; `node_provision_s`); node group at max → the pod stays Pending until a slot frees up, and the
Pending pods are retried in order whenever one does (a pod too big for the freed GPUs does not hold back smaller
ones behind it).
A node with no pods for `node_idle_timeout_s` is removed (cluster-autoscaler `scale-down-unneeded-time`,
10 min default), down to the number of warm nodes (treated as the node group's minimum size).
Pods loading weights from the model cache share its file system's reads (`load_total_gib_s`;
simulation/shared_reads.py), across every service of a fleet.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from simulation.clock import call_later
from simulation.shared_reads import SharedReads


def image_ref(scenario: Any) -> str:
    """The image a service's pods pull, as the kubelet names it: the predictor container's image reference; a
    predictor on a KServe ServingRuntime without one runs the runtime's image, named here by its runtime (or the
    model format KServe selects the runtime by: two services of one format run the same runtime image)."""
    serving = scenario.serving
    if serving.image:
        return serving.image
    container = serving.container
    fmt = container.get("modelFormat")
    fmt = fmt.get("name") if isinstance(fmt, dict) else None
    return f"runtime:{container.get('runtime') or fmt or ''}"


def model_ref(scenario: Any) -> str:
    """The model a service's pods download, as KServe's storage initializer fetches it: the predictor's
    storageUri (a custom container's STORAGE_URI), else the scenario's model name."""
    serving = scenario.serving
    uri = serving.container.get("storageUri") or serving.env.get("STORAGE_URI")
    return f"uri:{uri}" if uri else f"model:{scenario.model.name}"


class Node:
    __slots__ = ("id", "gpus", "free", "ready", "pods", "images", "models", "waiting", "created", "idle_call",
                 "removed")

    def __init__(self, nid: int, gpus: int, created: float) -> None:
        self.id = nid
        self.gpus = gpus
        self.free = gpus
        self.ready = False
        self.pods: set = set()
        self.images: dict[str, float] = {}   # image reference → time it is (or will be) on the node
        self.models: dict[str, float] = {}   # model (storage URI) → time its weights are (or will be) cached here
        self.waiting: list = []              # pods placed here waiting for the node to be ready
        self.created = created
        self.idle_call = None
        self.removed = False


class Cluster:
    def __init__(self, sim: Any, profile: Any) -> None:
        self.sim = sim
        self.env = sim.env
        self.p = profile
        self.nodes: list[Node] = []
        self.pending: deque = deque()
        self._next_id = 0
        self.gpu_area = 0.0      # Σ node GPUs · time (billed GPU-seconds)
        self.pod_gpu_area = 0.0  # Σ GPUs held by pods · time
        self._gpus_alive = 0
        self._gpus_used = 0
        self._used_by: dict[str, int] = {}   # GPUs held per service (pod.sim.scenario.name): a fleet shares nodes
        self.area_by: dict[str, float] = {}
        self._last = 0.0
        self.nodes_provisioned = 0
        self.min_nodes = 0           # set by the engine to the number of warm nodes
        # The model cache's file system, whose reads the loading pods of every service share (None: no limit)
        total = getattr(profile, "load_total_gib_s", None)
        self.reads = SharedReads(self.env, total) if total else None

    # -- accounting ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.env._now
        dt = now - self._last
        if dt:
            self.gpu_area += self._gpus_alive * dt
            self.pod_gpu_area += self._gpus_used * dt
            for owner, n in self._used_by.items():
                if n:
                    self.area_by[owner] += n * dt
            self._last = now

    def snapshot(self, owner: str | None = None) -> tuple[float, float]:
        """(node GPU-seconds, GPU-seconds held by pods — of `owner`'s pods when given) so far."""
        self._tick()
        return self.gpu_area, self.pod_gpu_area if owner is None else self.area_by.get(owner, 0.0)

    def _hold(self, pod: Any, sign: int) -> None:
        owner = pod.sim.scenario.name
        self._gpus_used += sign * pod.slots
        self._used_by[owner] = self._used_by.get(owner, 0) + sign * pod.slots
        self.area_by.setdefault(owner, 0.0)

    @property
    def node_count(self) -> int:
        return sum(1 for n in self.nodes if not n.removed)

    # -- nodes ---------------------------------------------------------------------------------------
    def add_node(self, ready: bool) -> Node:
        self._tick()
        node = Node(self._next_id, self.p.gpus_per_node, self.env._now)
        self._next_id += 1
        self.nodes.append(node)
        self._gpus_alive += node.gpus
        if ready:
            node.ready = True
        else:
            self.nodes_provisioned += 1
            call_later(self.env, self.p.node_provision_s.sample(self.sim.rng_infra), self._node_ready, node)
        return node

    def stock_warm(self, nodes: list[Node], scenarios: list[Any]) -> None:
        """The warm `nodes`, their first pods placed: each holds the image and weights of its pods, and one
        without a pod those of every scenario in `scenarios` (module docstring), as each scenario's cluster profile
        says warm nodes do (`image_cached_on_warm_nodes`, `model_cached_on_warm_nodes`)."""
        now = self.env._now
        for node in nodes:
            if node.removed:
                continue
            for sc in [pod.sim.scenario for pod in node.pods] if node.pods else scenarios:
                cp = sc.cluster
                if cp.image_cached_on_warm_nodes:
                    node.images.setdefault(image_ref(sc), now)
                if cp.model_cached_on_warm_nodes:
                    node.models.setdefault(model_ref(sc), now)

    def add_replacement(self) -> None:
        """The node group's auto-scaling group launches an instance for one that was lost (desired capacity
        unchanged). Pods already Pending are retried at once: the kube-scheduler binds them to the new node
        (scheduling_queue.go moves unschedulable pods back to the active queue on a Node add event), before the
        lost node's pods, which their ReplicaSet re-creates later, ask for room."""
        self.add_node(ready=False)
        self._retry_pending()

    def _node_ready(self, node: Node) -> None:
        node.ready = True
        waiting, node.waiting = node.waiting, []
        for pod in waiting:
            pod.on_node_ready()
        if not node.pods and node.idle_call is None:
            node.idle_call = call_later(self.env, self.p.node_idle_timeout_s, self._remove_if_idle, node)

    def _remove_if_idle(self, node: Node) -> None:
        node.idle_call = None
        if self.node_count <= self.min_nodes:
            return   # the node group's minimum (the warm nodes) stays
        if not node.pods and not node.removed and node.ready:
            self._tick()
            node.removed = True
            self._gpus_alive -= node.gpus

    def lose(self, node: Node) -> list:
        """The instance behind `node` is gone (hardware failure, spot reclaim without drain): its GPUs leave the
        node group now and its pods are unbound. Returns those pods sorted by name (deterministic order);
        the caller decides what the control plane does with them (simulation/stress.py)."""
        self._tick()
        node.removed = True
        self._gpus_alive -= node.gpus
        if node.idle_call is not None:
            node.idle_call.cancel()
            node.idle_call = None
        pods = sorted(node.pods, key=lambda p: p.name)
        for pod in pods:
            self._hold(pod, -1)
            pod.node = None
            if self.reads is not None:
                self.reads.stop(pod)
        node.pods.clear()
        node.waiting.clear()
        node.free = 0
        return pods

    # -- pods ----------------------------------------------------------------------------------------
    def place(self, pod: Any, notify: bool = True) -> bool:
        """Bind the pod to a node (maybe a new one); False → Pending (queued until GPUs free up)."""
        need = pod.slots
        best = None
        for node in self.nodes:
            if node.removed or node.free < need:
                continue
            if node.ready:
                best = node
                break
            if best is None:
                best = node
        if best is None and self.node_count < self.p.max_nodes and need <= self.p.gpus_per_node:
            best = self.add_node(ready=False)
        if best is None:
            self.pending.append(pod)
            return False
        self._bind(pod, best, notify)
        return True

    def _bind(self, pod: Any, node: Node, notify: bool = True) -> None:
        self._tick()
        node.free -= pod.slots
        node.pods.add(pod)
        self._hold(pod, 1)
        if node.idle_call is not None:
            node.idle_call.cancel()
            node.idle_call = None
        pod.node = node
        if not notify:
            return
        if node.ready:
            pod.on_node_ready()
        else:
            node.waiting.append(pod)

    def _retry_pending(self) -> None:
        """Each Pending pod in turn, in arrival order, as the kube-scheduler retries its unschedulable pods when
        resources free up (`pkg/scheduler/internal/queue/scheduling_queue.go`: each pod is scheduled on its own,
        one that does not fit does not hold back the pods behind it; its back-off, 1–10 s, is not modelled: it
        is retried at once). A pod needing at least the GPUs of one
        that found no room finds none either, and is not tried."""
        pending = self.pending
        no_room = math.inf
        for _ in range(len(pending)):
            pod = pending.popleft()
            if pod.slots >= no_room:
                pending.append(pod)
            elif not self.place(pod):                  # place() queued it again, at the tail: order kept
                no_room = pod.slots

    def unpend(self, pod: Any) -> None:
        try:
            self.pending.remove(pod)
        except ValueError:
            pass

    def release(self, pod: Any) -> None:
        node = pod.node
        if node is None:
            return
        self._tick()
        pod.node = None
        node.pods.discard(pod)
        if pod in node.waiting:
            node.waiting.remove(pod)
        node.free += pod.slots
        self._hold(pod, -1)
        self._retry_pending()
        if not node.pods and node.idle_call is None and not node.removed:
            node.idle_call = call_later(self.env, self.p.node_idle_timeout_s, self._remove_if_idle, node)

"""The loss of a GPU node (a stress event on a fleet, simulation/fleet.py): what each part of the path does and when.

The instance behind the busiest ready node disappears (hardware failure, spot reclaim without a drain). Its
GPUs leave the node group at once and the node group's Auto Scaling group launches a replacement instance
(`node_provision_s`). For its pods, in order:

1. At the loss: their in-flight work fails with 502 (as a crashed container's does; a vanished host may instead
   hang connections until the route timeout). The pods stay Ready in the Endpoints: nothing on the node reports
   any more.
   - The gateway keeps sending direct requests (Serve mode, Standard mode) to them. Each one fails at once with
     503 from the gateway, Envoy's answer to an upstream it cannot connect to.
   - The activator keeps them too. It probes a pod again only when the pod moves from ready to not-ready in the
     Endpoints (knative/serving pkg/activator/net/revision_backends.go: `checkDests` re-probes only
     `dests.becameNonReady`, and `probePodIPs` skips a pod already in `healthyPods`). So its throttler keeps
     giving requests to the dead pods' trackers. Each such request dials the vanished address with
     `DialWithBackOff` (knative.dev/pkg network/transports.go `dialBackOffHelper`): 16 dials with timeouts of
     50 ms, then `wait.Backoff.Step` (Duration 50 ms, Factor 1.4, Jitter 0.1, Steps 15) gives 50 ms × 1.4^k for
     k = 0…14, each stretched by up to 10 %, and a sleep of 30–60 ms (`wait.Jitter(30 ms, 1.0)`) between two
     dials. That is 19.8–22.2 s, about 21.0 s on average (`dial_backoff_s`). Then the activator answers 502: the
     reverse proxy's ErrorHandler (pkg/activator/handler/handler.go `proxyRequest` → knative.dev/pkg
     network/error_handler.go `ErrorHandler`, StatusBadGateway). Throughout the dial the request holds the pod
     tracker's slot: `revisionThrottler.try` (pkg/activator/net/throttler.go) releases the reservation only when
     the proxy call returns. With CC = 1 this blocks the dead pod, and the activator gives it the next request
     when the dial fails. `timeoutSeconds` still applies (504 from the activator if it comes first).
2. At `not_ready_s` (default 50 s): the pods are marked NotReady. The node lifecycle controller marks the node
   Unknown once its heartbeat is older than node-monitor-grace-period, then marks its pods NotReady
   (pkg/controller/nodelifecycle/node_lifecycle_controller.go `monitorNodeHealth` → `MarkPodsNotReady`). The
   grace period defaults to 50 s since Kubernetes 1.32 (kubernetes/kubernetes#126287, CHANGELOG-1.32
   v1.32.0-alpha.2; it was 40 s before). Every version the stack accepts is at least 1.32
   (stackconfig/cluster.py). The pods then leave the Endpoints, the KPA's ready pods, and the activator: the
   move to not-ready triggers the activator's re-probe, which fails.
3. At `replace_s`: the pods are deleted and the ReplicaSet replaces them. The cloud node-lifecycle controller
   deletes the Node object on its next pass over nodes that are not Ready, every 5 s (k8s.io/cloud-provider
   controllers/nodelifecycle `MonitorNodes`, `NodeMonitorPeriod` 5 s). PodGC's orphan pass, every
   `gcCheckPeriod` = 20 s, then queues the missing node for `quarantineTime` = 40 s and deletes its pods on the
   first pass after that (pkg/controller/podgc/gc_controller.go `gcOrphaned`). PodGC marks them Failed and
   deletes them, so the ReplicaSet creates their replacements. Unless the stack sets `replace_s`, it is drawn
   per run: not_ready_s + U(0, 5) + U(0, 20) + 40, which is 90–115 s with the defaults (`replace_delay`).

Simplifications:
- The node's heartbeat phase is not drawn. The kubelet renews its Lease every 10 s and the controller checks
  every 5 s, so NotReady really comes between about 40 and 55 s after the loss.
- Every dial times out: the vanished address answers nothing, with no RST or ICMP. A request that reuses an
  idle keep-alive connection to the pod instead hangs until `timeoutSeconds`. The activator's transport pools
  such connections (NewProxyAutoTransport). That case is not modelled, so the first requests to a dead pod may
  fare worse than shown.
- Whether pods on a shut-down instance are evicted by the unreachable taint (tolerationSeconds 300) is not
  modelled: the Node is deleted well before then.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from simulation.clock import call_later
from simulation.pod import GONE, TERMINATING
from simulation.request import ACTIVATOR, BAD_GATEWAY, GATEWAY, UNAVAILABLE

NOT_READY_S = 50.0            # kube-controller-manager --node-monitor-grace-period, Kubernetes >= 1.32
NODE_DELETE_PERIOD_S = 5.0    # cloud-controller-manager --node-monitor-period (cloud node-lifecycle controller)
PODGC_PERIOD_S = 20.0         # podgc gcCheckPeriod
PODGC_QUARANTINE_S = 40.0     # podgc quarantineTime

# knative.dev/pkg network/transports.go: backOffTemplate and the sleep between dials
DIAL_TIMEOUT_S = 0.05
DIAL_FACTOR = 1.4
DIAL_JITTER = 0.1
DIAL_STEPS = 15
DIAL_SLEEP_S = 0.03


@dataclass(frozen=True)
class NodeLoss:
    at_s: float = 120.0
    not_ready_s: float = NOT_READY_S     # loss → the pods NotReady: out of the Endpoints and the activator
    replace_s: float | None = None       # loss → the pods deleted and replaced; None: drawn (`replace_delay`)


def replace_delay(loss: NodeLoss, rng: random.Random) -> float:
    """Seconds from the loss until PodGC deletes the pods (module docstring, step 3)."""
    if loss.replace_s is not None:
        return loss.replace_s
    node_deleted = rng.uniform(0.0, NODE_DELETE_PERIOD_S)
    first_pass = rng.uniform(0.0, PODGC_PERIOD_S)
    return loss.not_ready_s + node_deleted + first_pass + PODGC_QUARANTINE_S


def dial_backoff_s(rng: random.Random) -> float:
    """How long `DialWithBackOff` tries a vanished address before it gives up (module docstring, step 1)."""
    total = DIAL_TIMEOUT_S            # the first dial: the template's Duration, no jitter
    timeout = DIAL_TIMEOUT_S
    for _ in range(DIAL_STEPS):
        total += DIAL_SLEEP_S * (1.0 + rng.random())            # wait.Jitter(sleep, 1.0)
        total += timeout * (1.0 + DIAL_JITTER * rng.random())   # Backoff.Step: this dial's timeout, jittered
        timeout *= DIAL_FACTOR
    return total


class _LostPod:
    """Stands in for a lost pod's queue-proxy until the pod is deleted. A direct request gets 503 from the
    gateway at once. A request from the activator waits out the dial back-off and gets 502 from the activator."""

    __slots__ = ("sim", "pod", "rng", "dialing")
    dead = True
    running = nwait = slots = 0      # the fused path (simulation/fused.py) sees no room and calls `accept`

    def __init__(self, pod: Any) -> None:
        self.sim = pod.sim
        self.pod = pod
        self.rng = random.Random(f"{pod.sim.seed}:dial:{pod.id}")   # its own stream: no other draw moves
        self.dialing: dict = {}      # requests in the dial back-off (insertion order: deterministic)

    def accept(self, req: Any) -> None:
        if not req.via_activator:
            self.sim.complete(req, UNAVAILABLE, GATEWAY)
            return
        req.pod = self.pod
        self.pod.enter(req)
        req.where = self
        self.dialing[req] = True
        call_later(self.sim.env, dial_backoff_s(self.rng), self._dial_failed, req)

    def _dial_failed(self, req: Any) -> None:
        if self.dialing.pop(req, False) is False or req.status:
            return     # already answered (a timeout: `abandon` took it out; the horizon: `fail_all`)
        req.where = None
        self.sim.complete(req, BAD_GATEWAY, ACTIVATOR)

    def abandon(self, req: Any) -> None:
        req.where = None
        self.dialing.pop(req, None)

    def fail_all(self, status: int) -> None:
        """The run's horizon (simulation/horizon.py): every request still dialing is answered `status`."""
        dialing, self.dialing = self.dialing, {}
        for req in dialing:
            if not req.status:
                req.where = None
                self.sim.complete(req, status, ACTIVATOR)


def lose_busiest_node(cluster: Any, loss: NodeLoss, rng: random.Random, log: dict) -> None:
    """Take away the ready node holding the most GPUs (lowest id on ties) and let the control plane react.
    `rng`: the run's node-loss stream, for `replace_delay`."""
    nodes = [n for n in cluster.nodes if n.ready and not n.removed]
    if not nodes:
        log["lost_pods"] = 0
        return
    node = max(nodes, key=lambda n: (n.gpus - n.free, -n.id))
    pods = cluster.lose(node)
    env = cluster.env
    replace = replace_delay(loss, rng)
    log.update(at_s=env.now, lost_pods=len(pods), node=node.id, replace_s=replace)
    if cluster.node_count < cluster.p.max_nodes:
        cluster.add_replacement()
    for pod in pods:
        _pod_died(pod)
    call_later(env, loss.not_ready_s, _pods_not_ready, pods)
    call_later(env, replace, _pods_deleted, pods)


def _pod_died(pod: Any) -> None:
    """The containers are gone. The pod stays in the Endpoints and in the activator until it is marked NotReady."""
    for c in pod._calls:
        c.cancel()
    pod._calls.clear()
    qp = pod.qp
    if pod.state not in (TERMINATING, GONE):
        pod.qp = _LostPod(pod)   # first: a request the activator sends on when the in-flight ones fail dials it
    qp.fail_all(502)


def _pods_not_ready(pods: list) -> None:
    """The node lifecycle controller marks the pods NotReady: they leave the Endpoints, the KPA's ready pods and,
    through the activator's re-probe, its healthy set. A pod the activator had probed before Kubernetes saw it
    Ready was never ready in the Endpoints: nothing moves for it until it is deleted."""
    for pod in pods:
        if pod.k8s_ready and pod.state not in (TERMINATING, GONE):
            pod._unready()


def _pods_deleted(pods: list) -> None:
    """PodGC deletes the pods → the ReplicaSet replaces those the Deployment still wants."""
    for pod in pods:
        sim = pod.sim
        wanted = pod.state not in (TERMINATING, GONE)
        if pod.act_ready or pod.k8s_ready:
            pod._unready()
        if wanted:
            sim.n_live -= 1   # the engine's count of pods neither Terminating nor Gone
        pod.state = GONE
        sim.on_pod_gone(pod)
        if wanted:
            sim._new_pod(False)

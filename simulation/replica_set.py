"""The revision's pods as its Deployment's ReplicaSet keeps them: the desired scale, the pods created or deleted to
reach it, and the endpoints they join and leave (a mixin of `engine.Sim`, whose state it uses).

Scale down deletes the pods the ReplicaSet controller ranks first (kubernetes `pkg/controller/controller_utils.go:
ActivePods` Less, the parts that apply here): unscheduled before scheduled, Pending before Running, not Ready
before Ready, then the newest first. Ready pods join the activator's and the KPA's views (`Pod` decides when).
"""

from __future__ import annotations

from bisect import insort
from operator import attrgetter

from simulation.autoscaler.hpa import MAX_REPLICAS
from simulation.pod import GONE, PENDING, STARTING, TERMINATING, Pod

_pod_id = attrgetter("id")


class ReplicaSet:
    """Pods of one revision (see the module docstring)."""

    def set_replicas(self, n: int) -> None:
        """The desired scale, at most MAX_REPLICAS pods (every pod is simulated; the report says `replica_cap`)."""
        if n > MAX_REPLICAS:
            self.desired_over_cap, n = max(self.desired_over_cap, n), MAX_REPLICAS
        cur = self.n_live
        self.replicas = n
        if n == cur:
            return
        if n > cur:
            for _ in range(n - cur):
                self._new_pod(False)
        else:
            live = [p for p in self.pods if p.state not in (TERMINATING, GONE)]

            def rank(p: Pod) -> tuple:
                r = 0 if (p.state == PENDING and p.node is None) else 1 if p.state == PENDING else \
                    2 if p.state == STARTING else 3
                return (r, -p.created, -p.id)
            for p in sorted(live, key=rank)[: cur - n]:
                p.terminate()

    def _new_pod(self, warm: bool) -> Pod:
        pod = Pod(self, self._pid, warm=warm)
        self._pid += 1
        self.pods.append(pod)
        self.servers.append(pod.server)
        self.n_live += 1
        if not warm:
            self.pods_created += 1
        pod.start()
        return pod

    def on_pod_act_ready(self, pod: Pod) -> None:
        if self.activator is not None:
            self.activator.add_pod(pod)

    def kpa_ready_added(self, pod: Pod) -> None:
        insort(self.kpa_ready, pod, key=_pod_id)

    def kpa_ready_removed(self, pod: Pod) -> None:
        self.kpa_ready.remove(pod)

    def on_pod_ready(self, pod: Pod) -> None:
        if self.prometheus is not None:
            self.prometheus.on_ready(pod)
        self._ready_acc()
        self.endpoints.append(pod)
        self._ready_changed()
        if not pod.warm and pod.ready_t == self.env.now:   # its first Ready, failed start-up attempts included
            self.cold_starts.append(pod.ready_t - pod.created)
            self.cold_phases.append(pod.cold_start_phases())
        if self.activator is not None and not pod.act_ready:
            pod.act_ready = True
            self.activator.add_pod(pod)

    def on_pod_unready(self, pod: Pod, was_act: bool, was_k8s: bool) -> None:
        if was_act and self.activator is not None:
            self.activator.remove_pod(pod)
        if was_k8s and pod in self.endpoints:
            self._ready_acc()
            self.endpoints.remove(pod)
            self._ready_changed()

    def on_pod_restart(self, pod: Pod, reason: str) -> None:
        self.restarts += 1
        self.restart_reasons[reason] = self.restart_reasons.get(reason, 0) + 1

    def on_pod_gone(self, pod: Pod) -> None:
        if pod in self.pods:
            self.pods.remove(pod)

"""Cluster placement and node scale-down edges (simulation/cluster.py) on a fake profile and fake pods, so each case
sets up exactly the node states it needs: nodes that become ready out of order, a pod that needs a whole node, a
pod bigger than any node, the FIFO Pending queue, and the idle timer of a node that booted unused."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import simpy

from simulation.cluster import Cluster


class _Pod:
    def __init__(self, name: str, slots: int = 1, owner: str = "svc"):
        self.name, self.slots, self.node, self.ready_calls = name, slots, None, 0
        self.sim = SimpleNamespace(scenario=SimpleNamespace(name=owner))

    def on_node_ready(self) -> None:
        self.ready_calls += 1


def _cluster(max_nodes: int = 4, provision_s: float = 300.0,
             idle_s: float = 600.0) -> tuple[Cluster, simpy.Environment]:
    env = simpy.Environment()
    profile = SimpleNamespace(gpus_per_node=4, max_nodes=max_nodes, node_idle_timeout_s=idle_s, load_total_gib_s=None,
                              node_provision_s=SimpleNamespace(sample=lambda rng: provision_s))
    return Cluster(SimpleNamespace(env=env, rng_infra=random.Random(0)), profile), env


def test_a_ready_node_wins_over_an_earlier_provisioning_one():
    """Module docstring: first fit in creation order, preferring nodes that are already ready. Nodes come up out of
    order (node_provision_s is drawn per node), so node 0 may still boot while node 1 is up."""
    cluster, _ = _cluster()
    booting = cluster.add_node(ready=False)
    up = cluster.add_node(ready=True)
    pod = _Pod("p0")
    assert cluster.place(pod)
    assert pod.node is up and pod.ready_calls == 1          # starts now, not after the 300 s boot
    assert (booting.free, up.free) == (4, 3)


def test_a_pod_bigger_than_any_node_stays_pending_without_provisioning_a_node():
    """A node that cannot hold the pod is not provisioned for it (it would stay unschedulable there too)."""
    cluster, _ = _cluster()
    big = _Pod("big", slots=8)
    assert not cluster.place(big)
    assert cluster.nodes == [] and cluster.nodes_provisioned == 0 and list(cluster.pending) == [big]


def test_a_pending_whole_node_pod_is_placed_when_a_whole_node_frees():
    cluster, _ = _cluster(max_nodes=1)
    cluster.add_node(ready=True)
    a, b = _Pod("a", slots=4), _Pod("b", slots=4)
    assert cluster.place(a) and not cluster.place(b)
    cluster.release(a)
    assert b.node is cluster.nodes[0] and b.ready_calls == 1 and not cluster.pending


def test_the_pending_queue_keeps_fifo_order_when_its_head_still_does_not_fit():
    """A release that frees too little for the head leaves the queue as it was: the head once, at the head."""
    cluster, _ = _cluster(max_nodes=1)
    cluster.add_node(ready=True)
    x, y = _Pod("x", slots=3), _Pod("y", slots=1)
    assert cluster.place(x) and cluster.place(y)
    a, b = _Pod("a", slots=2), _Pod("b", slots=2)
    assert not cluster.place(a) and not cluster.place(b)
    cluster.release(y)                                       # 1 GPU free: a (2) still does not fit
    assert list(cluster.pending) == [a, b]
    cluster.release(x)                                       # 4 free: a, then b
    assert (a.node, b.node) == (cluster.nodes[0], cluster.nodes[0]) and not cluster.pending


def test_an_idle_node_is_removed_after_the_idle_timeout_but_not_below_the_minimum():
    """cluster-autoscaler scale-down-unneeded-time, down to the node group's minimum (the warm nodes)."""
    cluster, env = _cluster(idle_s=100.0)
    keep, spare = cluster.add_node(ready=True), cluster.add_node(ready=True)
    cluster.min_nodes = 1
    pods = [_Pod("a"), _Pod("b", slots=4)]
    assert all(cluster.place(p) for p in pods)
    assert (pods[0].node, pods[1].node) == (keep, spare)
    for p in pods:
        cluster.release(p)
    env.run(until=150)
    assert keep.removed                                      # the first idle timer: 2 nodes > the minimum
    assert not spare.removed and cluster.node_count == 1     # the second: the minimum of one stays


def test_a_node_that_boots_unused_is_removed_an_idle_timeout_after_it_is_ready():
    """The pod that asked for the node went away while the node booted: the idle timer that fires during the boot
    leaves the booting node alone, and the node, once ready, gets a timer of its own."""
    cluster, env = _cluster(provision_s=300.0, idle_s=100.0)
    pod = _Pod("p")
    assert cluster.place(pod)                                # provisions node 0 (ready at 300 s)
    node = pod.node
    cluster.release(pod)                                     # idle timer at 100 s, node still booting
    env.run(until=250)
    assert not node.ready and not node.removed and cluster.node_count == 1
    env.run(until=399)
    assert node.ready and not node.removed
    env.run(until=401)
    assert node.removed and cluster.node_count == 0


def test_snapshot_accumulates_node_and_pod_gpu_seconds_per_owner():
    cluster, env = _cluster()
    cluster.add_node(ready=True)
    a, b = _Pod("a", slots=2, owner="s1"), _Pod("b", slots=1, owner="s2")
    assert cluster.place(a) and cluster.place(b)
    env.run(until=10)
    cluster.release(b)
    env.run(until=30)
    assert cluster.snapshot() == (pytest.approx(4 * 30), pytest.approx(2 * 30 + 1 * 10))
    assert cluster.snapshot("s1")[1] == pytest.approx(60) and cluster.snapshot("s2")[1] == pytest.approx(10)


def test_a_pending_pod_too_big_for_the_freed_gpus_does_not_hold_back_a_smaller_one():
    """kube-scheduler schedules each Pending pod on its own (scheduling_queue.go: an unschedulable pod goes back to
    its queue, the next pod is tried): a 4-GPU pod at the head of the queue, with 1 GPU freed, leaves the 1-GPU pod
    behind it free to take that GPU. Both stay in arrival order otherwise."""
    cluster, _ = _cluster(max_nodes=1)
    node = cluster.add_node(ready=True)
    held = [_Pod(f"h{i}") for i in range(4)]
    assert all(cluster.place(p) for p in held)
    big, small, big2 = _Pod("big", slots=4), _Pod("small"), _Pod("big2", slots=2)
    assert not cluster.place(big) and not cluster.place(small) and not cluster.place(big2)
    cluster.release(held[0])
    assert small.node is node and small.ready_calls == 1
    assert list(cluster.pending) == [big, big2] and node.free == 0
    cluster.release(held[1])
    cluster.release(held[2])
    assert big2.node is node and list(cluster.pending) == [big]   # 2 GPUs free: the 4-GPU pod still waits


def test_a_pod_pending_at_the_node_limit_takes_the_replacement_of_a_lost_node():
    """Node loss at max nodes: the ASG's replacement instance is where the kube-scheduler binds a pod that was
    already Pending (it used to sit empty until its idle timer removed it, the pod Pending on)."""
    cluster, env = _cluster(max_nodes=1, idle_s=100.0)
    lost = cluster.add_node(ready=True)
    a, b = _Pod("a", slots=4), _Pod("b", slots=4)
    assert cluster.place(a) and not cluster.place(b)
    assert cluster.lose(lost) == [a]
    cluster.add_replacement()
    new = cluster.nodes[-1]
    assert new is not lost and b.node is new and not cluster.pending and b.ready_calls == 0   # waits for its boot
    env.run(until=1_000)
    assert new.ready and not new.removed and b.ready_calls == 1

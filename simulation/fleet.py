"""Several services on one GPU node group, in one simulation: they compete for the same GPUs.

Each service runs its own request path and autoscaler (engine.Sim) on one SimPy clock and one `Cluster`: a
pod that one service's autoscaler adds takes a free GPU anywhere in the node group, provisions a node (up to
the group's max size) or stays Pending — as the kube-scheduler and the cluster-autoscaler treat pods of
different Deployments alike (first come, first placed; no priorities or preemption: the shipped services
carry no PriorityClass). Stress events (simulation/stress.py) act on the fleet: a spike on a service's
traffic, a rollout of a service's new revision, the loss of a node, a service starting from zero replicas.

A fleet mapping (what `gate.stress` generates, JSON-able so replications can run anywhere):

    name: prod/spike
    duration_s: 600
    warmup_s: 0
    max_requests: 2000000          # the run's request budget, all services and spikes together (default: the
                                   # smallest of its scenarios' max_requests, else simulation/budget.py's)
    cluster: {...}                 # the node group: a scenario's `cluster:` keys
    node_loss: {at_s: 120, not_ready_s: 50}   # replace_s: drawn unless given (simulation/node_loss.py)
    services:
      - scenario: {...}            # a scenario mapping (simulation/scenario.py) without cluster/duration;
                                   # its config_autoscaler, if any, the same in every service (one cluster)
        spike: {factor: 3, at_s: 120, duration_s: 120}
        rollout: {at_s: 60}          # deadline: the scenario's serving.knative.dev/progress-deadline (600 s)
        from_zero: true            # starts at zero replicas (scale from zero)

`run_fleet(fleet, seed)` returns {"name", "seed", "services": {name: report}, "node_group": {...},
"events": {...}}. Each service's random streams are seeded from (seed, service name), so adding a service
does not change another's arrivals. In a fleet, each service report's `gpu_hours`/`nodes_provisioned` are the
node group's and its `pod_gpu_hours` its own pods'; a rolled-out service's report covers both revisions' requests and
cold starts (its Little's-law figures cover the old revision's attempts only).
"""

from __future__ import annotations

import json
import math
import random
import zlib
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import simpy

from simulation import horizon
from simulation.budget import DEFAULT_REQUEST_BUDGET, expected_requests, run_problem, spike_requests
from simulation.clock import run_until
from simulation.cluster import Cluster
from simulation.engine import Sim
from simulation.node_loss import NodeLoss, lose_busiest_node
from simulation.scenario import ClusterProfile, Scenario, load_scenario, parse_cluster
from simulation.stress import Rollout, RolloutDriver, Spike, with_spike
from validation.errors import InputError, Problem
from validation.fields import Section

NEW_REVISION_POD_IDS = 100_000   # the new revision's pod names start here (distinct from the old one's)


@dataclass(frozen=True)
class Member:
    scenario: Scenario
    spike: Spike | None = None
    rollout: Rollout | None = None
    from_zero: bool = False


@dataclass(frozen=True)
class Fleet:
    name: str
    cluster: ClusterProfile
    members: tuple[Member, ...]
    duration_s: float
    node_loss: NodeLoss | None = None


def _spike(sec: Section) -> Spike | None:
    if not sec.data:
        return None
    d = Spike()
    out = Spike(sec.float("factor", d.factor, min=1.0, max=100.0), sec.float("at_s", d.at_s, min=0.0),
                sec.float("duration_s", d.duration_s, min=1.0))
    sec.done()
    return out


def _rollout(sec: Section) -> Rollout | None:
    if not sec.data:
        return None
    out = Rollout(sec.float("at_s", Rollout().at_s, min=0.0))
    if sec.has("progress_deadline_s"):
        sec.problem("progress_deadline_s", sec.raw("progress_deadline_s"), DEADLINE_MOVED)
    sec.done()
    return out


DEADLINE_MOVED = ("progress_deadline_s is gone: it was a second setting for one Knative knob. A rollout's deadline "
                  "is the revision's own serving.knative.dev/progress-deadline annotation on the scenario's "
                  "InferenceService (600 s without it), which the simulated KPA reads too: set it there")


def _node_loss(sec: Section) -> NodeLoss | None:
    if not sec.data:
        return None
    d = NodeLoss()
    at_s = sec.float("at_s", d.at_s, min=0.0)
    if sec.has("detect_s"):
        sec.problem("detect_s", sec.raw("detect_s"), DETECT_SPLIT)
    not_ready = sec.float("not_ready_s", d.not_ready_s, min=0.0, max=3600.0)
    replace_s = sec.float("replace_s", None, min=0.0, max=3600.0)
    if replace_s is not None and replace_s < not_ready:
        sec.problem("replace_s", replace_s, f"expected at least not_ready_s ({not_ready:g}): PodGC deletes the pods "
                    "only after the node is NotReady and deleted")
        replace_s = None
    out = NodeLoss(at_s, not_ready, replace_s)
    sec.done()
    return out


DETECT_SPLIT = ("detect_s is gone: it stood for two moments that are far apart. Use not_ready_s (loss → the pods "
                f"NotReady and out of the endpoints; default {NodeLoss().not_ready_s:g}, node-monitor-grace-period) "
                "and replace_s (loss → the pods deleted and replaced; default drawn, not_ready_s + 40 to 65 s): "
                "simulation/node_loss.py")


def load_fleet(mapping: Any, *, base_dir: Any = None) -> Fleet:
    """Parse a fleet mapping; raises one InputError naming every problem's key path."""
    problems: list[Problem] = []
    top = Section(mapping, "", problems)
    name = top.str("name", "fleet")
    duration = top.float("duration_s", 600.0, min=1.0, max=30 * 86400.0, required=True)
    warmup = top.float("warmup_s", 0.0, min=0.0)
    cluster_raw = top.raw("cluster") or {}
    cluster = parse_cluster(top.section("cluster"))
    node_loss = _node_loss(top.section("node_loss"))
    raw_services = top.raw("services")
    members: list[Member] = []
    if not isinstance(raw_services, list) or not raw_services:
        top.problem("services", raw_services, "expected a non-empty list of {scenario, spike, rollout, from_zero}")
        raw_services = []
    names: set[str] = set()
    budget = top.int("max_requests", None, min=1, max=10**12)  # default: the smallest of its scenarios' budgets
    budgets: list[int] = []
    knative: dict = {}  # the first service's config_autoscaler: one cluster, one ConfigMap
    for i, raw in enumerate(raw_services):
        sec = Section(raw, f"services[{i}]", problems)
        sc_raw = sec.raw("scenario")
        spike, rollout = _spike(sec.section("spike")), _rollout(sec.section("rollout"))
        from_zero = sec.bool("from_zero", False)
        sec.raw("name")
        sec.done()
        if not isinstance(sc_raw, dict):
            sec.problem("scenario", sc_raw, "expected a scenario mapping")
            continue
        data = {**sc_raw, "cluster": cluster_raw, "duration_s": duration, "warmup_s": warmup}
        if isinstance(sc_raw.get("max_requests"), int) and not isinstance(sc_raw["max_requests"], bool):
            budgets.append(sc_raw["max_requests"])
        if from_zero:
            data["initial_replicas"] = 0
        try:
            scenario = load_scenario(data, base_dir=base_dir)
        except InputError as err:
            problems.extend(Problem(f"services[{i}].scenario.{p.path}", p.value, p.allowed) for p in err.problems)
            continue
        if scenario.name in names:
            sec.problem("scenario.name", scenario.name, "expected a name no other service of the fleet has")
        knative.setdefault("first", sc_raw.get("config_autoscaler"))
        if sc_raw.get("config_autoscaler") != knative["first"]:
            sec.problem("scenario.config_autoscaler", sc_raw.get("config_autoscaler"), "expected the first service's: "
                        "the services share one cluster and its one knative-serving/config-autoscaler")
        names.add(scenario.name)
        if rollout is not None and scenario.serving.mode != "Knative":
            sec.problem("rollout", raw.get("rollout"), "expected only on Knative services (a Deployment's rolling "
                        "update is not modelled)")
        members.append(Member(scenario, spike, rollout, from_zero))
    top.done()
    if not problems:
        _check_run(top, members, duration, node_loss, budget or min(budgets, default=DEFAULT_REQUEST_BUDGET))
    if problems:
        raise InputError(problems, "fleet")
    return Fleet(name, cluster, tuple(members), duration, node_loss)


def _check_run(top: Section, members: list[Member], duration: float, node_loss: NodeLoss | None,
               budget: int) -> None:
    """Every event inside the run (one at or past its end never happens, and the run would pass as a steady
    one), and the whole fleet's requests (spikes included) within one run's budget (simulation/budget.py)."""
    late = f"expected less than duration_s ({duration:g} s): an event at or after the run's end never happens"
    if node_loss is not None and node_loss.at_s >= duration:
        top.problem("node_loss.at_s", node_loss.at_s, late)
    parts = {}
    for i, m in enumerate(members):
        for kind, event in (("spike", m.spike), ("rollout", m.rollout)):
            if event is not None and event.at_s >= duration:
                top.problem(f"services[{i}].{kind}.at_s", event.at_s, late)
        parts[m.scenario.name] = expected_requests(m.scenario.workload, duration)
        if m.spike is not None:
            s = m.spike
            parts[f"{m.scenario.name} spike"] = spike_requests(m.scenario.workload, s.factor, s.at_s, s.duration_s,
                                                                 duration)
    over = run_problem(parts, f"the fleet ({duration:g} s)", budget, "services", "raise the fleet's max_requests")
    if over:
        top.problems.append(over)


def service_seed(seed: int, name: str) -> int:
    """Each service's random streams hang off (seed, its name)."""
    return zlib.crc32(f"{seed}:{name}".encode())


class FleetSim(Sim):
    """A service in a fleet: its arrivals may carry a spike; its route may point at a newer revision."""

    def __init__(self, member: Member, seed: int, env: Any, cluster: Cluster) -> None:
        super().__init__(member.scenario, seed, env=env, cluster=cluster)
        self.member = member
        self._route: Sim | None = None    # the revision the Route sends new requests to (None: this one)
        self.on_ready_hook = None
        self.silent = False               # a new revision: its traffic arrives through the old one's route

    def arrival_stream(self) -> Any:
        if self.silent:
            return iter(())
        base = super().arrival_stream()
        spike = self.member.spike
        if spike is None:
            return base
        sc = self.scenario
        return with_spike(base, sc.workload, spike, random.Random(f"{self.seed}:spike"), sc.duration_s)

    @property
    def route(self) -> Sim | None:
        return self._route

    @route.setter
    def route(self, new: Sim) -> None:
        """The Route points at `new`: every request this revision's arrivals and client send goes there."""
        self._route = new
        self.send = new.send  # shadows Sim.send on this object (no per-request check while it stays None)

    def on_pod_ready(self, pod: Any) -> None:
        super().on_pod_ready(pod)
        if self.on_ready_hook is not None:
            self.on_ready_hook()


def _new_revision(old: FleetSim) -> FleetSim:
    new = FleetSim(old.member, old.seed + 1, old.env, old.cluster)
    new.silent = True
    new._pid = NEW_REVISION_POD_IDS
    # One service: one user population, one set of records across both revisions.
    new.rec, new.client = old.rec, old.client
    new.cold_starts, new.cold_phases, new.cold_censored = old.cold_starts, old.cold_phases, old.cold_censored
    return new


def run_fleet(fleet: Fleet, seed: int = 0) -> dict:
    """Run every service of the fleet on one clock and one node group; the same fleet and seed give the same
    result."""
    env = simpy.Environment()
    cluster = Cluster(SimpleNamespace(env=env, rng_infra=random.Random(f"{seed}:infra")), fleet.cluster)
    sims = [FleetSim(m, service_seed(seed, m.scenario.name), env, cluster) for m in fleet.members]
    cp = fleet.cluster
    need = sum(s.initial_replicas() * max(1, s.scenario.serving.gpus) for s in sims)
    warm = max(cp.warm_nodes or 0, min(cp.max_nodes, math.ceil(need / cp.gpus_per_node)))
    cluster.min_nodes = warm
    nodes = [cluster.add_node(ready=True) for _ in range(warm)]
    events: dict[str, Any] = {}
    rollouts: dict[str, dict] = {}
    for sim in sims:
        sim.start(add_nodes=False)
        if sim.member.rollout is not None:
            log = rollouts[sim.scenario.name] = {}
            RolloutDriver(sim, lambda s=sim: _new_revision(s), sim.member.rollout, log)
    # Each warm node holds the images and weights of its first pods; one with none, every service's (cluster.py)
    cluster.stock_warm(nodes, [sim.scenario for sim in sims])
    if fleet.node_loss is not None:
        nl = fleet.node_loss
        loss = events["node_loss"] = {"not_ready_s": nl.not_ready_s}
        rng = random.Random(f"{seed}:node-loss")
        env.process(_at(env, nl.at_s, lambda: lose_busiest_node(cluster, nl, rng, loss)))
    pending = {s.scenario.name: [0, 0] for s in sims}     # [max Pending pods, Pending pod-seconds]
    env.process(_count_pending(env, cluster, pending, fleet.duration_s))
    run_until(env, fleet.duration_s + 1e-9)   # `env.run(until=…)` with SimPy's step inlined
    every = lambda: sims + [r["new_revision"] for r in rollouts.values() if "new_revision" in r]  # noqa: E731
    end = fleet.duration_s + max(m.scenario.drain_s for m in fleet.members)
    while any(s.busy for s in every()) and env.now < end:
        env.run(until=min(end, env.now + 1.0))
    services = {}
    for sim in sims:
        log = rollouts.get(sim.scenario.name)
        new = log.pop("new_revision", None) if log else None
        if new is not None:
            horizon.close(new)   # its pods and requests still open (sim.finish closes the old revision's)
            sim.restarts += new.restarts
            sim.pods_created += new.pods_created
            for k, v in new.restart_reasons.items():
                sim.restart_reasons[k] = sim.restart_reasons.get(k, 0) + v
        report = json.loads(sim.finish().to_json())
        report["pending_pods"] = {"max": pending[sim.scenario.name][0], "pod_seconds": pending[sim.scenario.name][1]}
        if log is not None:
            report["rollout"] = log
        services[sim.scenario.name] = report
    gpu_h = next(iter(services.values()))["gpu_hours"] if services else 0.0
    return {"name": fleet.name, "seed": seed, "services": services, "events": events,
            "node_group": {"gpu_hours": gpu_h, "nodes_provisioned": cluster.nodes_provisioned,
                           "max_nodes": cp.max_nodes, "gpus_per_node": cp.gpus_per_node}}


def _at(env: Any, t: float, fn: Any):
    yield env.timeout(t)
    fn()


def _count_pending(env: Any, cluster: Cluster, out: dict, until: float):
    """Once a second: each service's pods waiting for a GPU (kube-scheduler: Unschedulable)."""
    while env.now + 1.0 <= until:
        yield env.timeout(1.0)
        counts: dict[str, int] = {}
        for pod in cluster.pending:
            name = pod.sim.scenario.name
            counts[name] = counts.get(name, 0) + 1
        for name, n in counts.items():
            rec = out[name]
            rec[0] = max(rec[0], n)
            rec[1] += n

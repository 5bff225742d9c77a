"""Several services on one node group (simulation/fleet.py) and the stress events (simulation/stress.py)."""

from __future__ import annotations

import json

import pytest

from simulation.fleet import load_fleet, run_fleet
from validation.errors import InputError

from tests.simulation.conftest import isvc


def _svc(name: str, rate: float, min_r: int = 1, max_r: int = 4, cc: int = 2, service_s: float = 4.0,
         **annotations) -> dict:
    manifest = isvc(cc=cc, min_replicas=min_r, max_replicas=max_r,
                    annotations={"autoscaling.knative.dev/target-burst-capacity": "0",
                                 "autoscaling.knative.dev/window": "20s", **annotations})
    manifest["metadata"]["name"] = name
    return {"name": name, "inferenceService": manifest, "workload": {"kind": "poisson", "rate": rate},
            "server": {"kind": "simple", "base_s": service_s, "distribution": "exponential"}}


CLUSTER = {"gpus_per_node": 1, "max_nodes": 4, "warm_nodes": 4, "node_provision_s": 60, "image_gib": 1,
           "warmup_s": 20, "load_gib_s": 1}


def _fleet(*members: dict, duration: float = 600.0, cluster: dict | None = None, **extra) -> dict:
    return {"name": "t", "duration_s": duration, "cluster": {**CLUSTER, **(cluster or {})},
            "services": list(members), **extra}


def _run(mapping: dict, seed: int = 1) -> dict:
    return run_fleet(load_fleet(mapping), seed)


def test_same_fleet_and_seed_give_the_same_result_and_services_keep_their_own_streams():
    fleet = _fleet({"scenario": _svc("a", 0.5)}, {"scenario": _svc("b", 0.5)})
    first, again = _run(fleet), _run(fleet)
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert _run(fleet, seed=2)["services"]["a"] != first["services"]["a"]
    # b's arrivals hang off (seed, "b"): a different neighbour leaves their count alone.
    other = _run(_fleet({"scenario": _svc("c", 0.2)}, {"scenario": _svc("b", 0.5)}))
    assert other["services"]["b"]["attempts"]["count"] == first["services"]["b"]["attempts"]["count"]


def test_services_on_one_node_group_compete_for_its_gpus():
    """Alone, b gets the 3 pods it wants; beside a that holds 3 of the 4 GPUs, b's extra pods stay Pending."""
    b = {"scenario": _svc("b", 1.2, max_r=3)}
    alone = _run(_fleet(b))["services"]["b"]
    assert alone["pending_pods"]["max"] == 0 and alone["replicas"]["max"] == 3
    both = _run(_fleet({"scenario": _svc("a", 1.2, min_r=3, max_r=3)}, b))
    shared = both["services"]["b"]
    assert shared["replicas"]["max"] == 1 and shared["pending_pods"]["max"] >= 1
    assert shared["status_counts"].get("503", 0) > alone["status_counts"].get("503", 0)
    # GPU-hours: the node group's are shared; each service's pods' are its own (a holds 3 GPUs, b 1).
    assert both["services"]["a"]["gpu_hours"] == shared["gpu_hours"] == pytest.approx(4 * 600 / 3600, rel=1e-5)
    assert both["services"]["a"]["pod_gpu_hours"] == pytest.approx(3 * 600 / 3600, rel=1e-5)
    assert shared["pod_gpu_hours"] == pytest.approx(1 * 600 / 3600, rel=1e-5)


def test_a_spike_adds_factor_minus_one_times_the_rate_for_its_duration():
    plain = _run(_fleet({"scenario": _svc("a", 0.5)}))["services"]["a"]["requests"]
    spiked = _run(_fleet({"scenario": _svc("a", 0.5), "spike": {"factor": 3, "at_s": 100, "duration_s": 200}}))
    extra = spiked["services"]["a"]["requests"] - plain
    assert extra == pytest.approx(2 * 0.5 * 200, rel=0.2)   # Poisson: 200 ± 14


def test_node_loss_fails_in_flight_work_blackholes_until_detected_and_the_group_replaces_the_node():
    fleet = _fleet({"scenario": _svc("a", 1.0, min_r=4, max_r=4)}, cluster={"warm_nodes": 4},
                   node_loss={"at_s": 200, "not_ready_s": 40, "replace_s": 100})
    out = _run(fleet)
    a = out["services"]["a"]
    assert out["events"]["node_loss"]["lost_pods"] == 1
    assert a["errors_by_component"]["503"] == {"gateway": a["status_counts"]["503"]}
    assert 0.25 * 40 * 0.5 < a["status_counts"]["503"] < 0.25 * 40 * 2   # a quarter of the traffic for 40 s
    assert a["status_counts"].get("502", 0) >= 1                          # what was in flight on the node
    assert out["node_group"]["nodes_provisioned"] == 1                     # the ASG's replacement
    assert a["pods_created"] == 1 and a["cold_starts"] == 1                # the ReplicaSet's replacement
    assert a["replica_series"]["ready"][-1] == 4
    control = _run(_fleet({"scenario": _svc("a", 1.0, min_r=4, max_r=4)}, cluster={"warm_nodes": 4}))
    assert control["services"]["a"]["status_counts"].get("503", 0) == 0


def test_a_rollout_switches_traffic_when_the_new_revision_is_ready_and_the_old_one_scales_down():
    fleet = _fleet({"scenario": _svc("a", 0.5, min_r=1, max_r=2), "rollout": {"at_s": 60}},
                   cluster={"warm_nodes": 1}, duration=900)
    a = _run(fleet)["services"]["a"]
    ready = a["rollout"]["ready_s"]
    assert ready is not None and ready >= 60 + 20       # node provisioning + image pull + load + warm-up
    assert a["cold_starts"] >= 1 and a["status_counts"] == {"200": a["requests"]}
    series = a["replica_series"]
    assert series["ready"][-1] == 0                     # the old revision, unreachable, went to zero


def test_a_rollout_without_free_gpus_never_gets_ready():
    deadline = {"serving.knative.dev/progress-deadline": "300s"}
    fleet = _fleet({"scenario": _svc("a", 0.5, min_r=2, max_r=2, **deadline), "rollout": {"at_s": 30}},
                   cluster={"max_nodes": 2, "warm_nodes": 2}, duration=400)
    a = _run(fleet)["services"]["a"]
    assert a["rollout"]["ready_s"] is None and a["pending_pods"]["max"] == 2
    assert a["status_counts"] == {"200": a["requests"]}  # the old revision kept serving


def test_a_bad_fleet_names_every_problem_with_its_key_path():
    bad = _fleet({"scenario": _svc("a", 0.5), "spike": {"factor": 0.5, "durtion_s": 3}},
                 {"scenario": {**_svc("b", 0.5), "workload": {"kind": "possion"}}},
                 node_loss={"at_s": -1})
    with pytest.raises(InputError) as err:
        load_fleet(bad)
    text = str(err.value)
    assert "services[0].spike.factor: got 0.5" in text
    assert "services[0].spike.durtion_s" in text and "did you mean 'duration_s'" in text
    assert "services[1].scenario.workload.kind: got 'possion'" in text
    assert "node_loss.at_s: got -1" in text


def test_the_services_of_a_fleet_share_one_config_autoscaler():
    """One cluster, one knative-serving/config-autoscaler: a fleet whose services disagree is refused."""
    ca = {"config_autoscaler": {"max-scale-up-rate": "2"}}
    load_fleet(_fleet({"scenario": {**_svc("a", 0.5), **ca}}, {"scenario": {**_svc("b", 0.5), **ca}}))  # control
    with pytest.raises(InputError) as err:
        load_fleet(_fleet({"scenario": {**_svc("a", 0.5), **ca}}, {"scenario": _svc("b", 0.5)}))
    assert [(p.path, p.value) for p in err.value.problems] == [("services[1].scenario.config_autoscaler", None)]

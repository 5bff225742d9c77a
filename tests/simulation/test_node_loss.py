"""A lost GPU node (simulation/node_loss.py): the activator keeps the dead pods until they are marked NotReady and
each request it sends there fails with 502 after the dial back-off (knative/serving revision_backends.go,
knative.dev/pkg network/transports.go); the pods leave the endpoints at `not_ready_s` (node-monitor-grace-period)
and are replaced later, at `replace_s` (PodGC's orphan pass). Review rev9-sim findings 1 and 2."""

from __future__ import annotations

import json
import random

import pytest

from simulation import node_loss
from simulation.engine import Sim
from simulation.fleet import load_fleet, run_fleet
from simulation.replica_set import ReplicaSet
from validation.errors import InputError

from tests.simulation.test_fleet import _fleet, _svc

AT, NOT_READY, REPLACE = 200.0, 50.0, 110.0
# DialWithBackOff's bounds: 16 dials (50 ms, then 50 ms × 1.4^k for k = 0..14, up to +10 %), 15 sleeps of 30-60 ms
DIAL_MIN = 0.05 + sum(0.05 * 1.4 ** k for k in range(15)) + 15 * 0.03
DIAL_MAX = 0.05 + sum(0.055 * 1.4 ** k for k in range(15)) + 15 * 0.06


def _activator_fleet(**loss) -> dict:
    """CC = 1 and the default target-burst-capacity: the activator is always in the path. One GPU per node, so the
    lost node (the lowest id on a tie) holds pod 0, which first-available balancing tries first."""
    svc = _svc("a", 0.5, min_r=3, max_r=3, cc=1)
    del svc["inferenceService"]["metadata"]["annotations"]["autoscaling.knative.dev/target-burst-capacity"]
    return _fleet({"scenario": svc}, cluster={"warm_nodes": 3}, duration=500.0, node_loss={"at_s": AT, **loss})


def _watch(monkeypatch) -> dict:
    """Record what the run does to the lost pod: dispatches to it, answers, endpoint/KPA removals, new pods."""
    log: dict = {"sent": {}, "answers": [], "unready": [], "kpa_removed": [], "created": []}
    accept, complete = node_loss._LostPod.accept, Sim.complete
    unready, kpa_removed, new_pod = ReplicaSet.on_pod_unready, ReplicaSet.kpa_ready_removed, ReplicaSet._new_pod

    def on_accept(self, req):
        if req.via_activator:
            log["sent"][req] = self.sim.env.now
        return accept(self, req)

    def on_complete(self, req, status, component):
        if req in log["sent"] and not req.status:
            log["answers"].append((log["sent"][req], self.env.now, status, component))
        return complete(self, req, status, component)

    def on_unready(self, pod, was_act, was_k8s):
        log["unready"].append((self.env.now, pod.name, was_act, was_k8s))
        return unready(self, pod, was_act, was_k8s)

    def on_kpa_removed(self, pod):
        log["kpa_removed"].append((self.env.now, pod.name))
        return kpa_removed(self, pod)

    def on_new_pod(self, warm):
        pod = new_pod(self, warm)
        if not warm:
            log["created"].append(self.env.now)
        return pod

    monkeypatch.setattr(node_loss._LostPod, "accept", on_accept)
    monkeypatch.setattr(Sim, "complete", on_complete)
    monkeypatch.setattr(ReplicaSet, "on_pod_unready", on_unready)
    monkeypatch.setattr(ReplicaSet, "kpa_ready_removed", on_kpa_removed)
    monkeypatch.setattr(ReplicaSet, "_new_pod", on_new_pod)
    return log


def test_the_activator_sends_to_a_lost_pod_until_it_is_not_ready_and_each_request_gets_502_after_the_dial(
        monkeypatch):
    """Before: the activator dropped the lost pod at the loss, so nothing was ever sent there and the scenario showed
    no 502 from the activator and no ~21-s request."""
    log = _watch(monkeypatch)
    out = run_fleet(load_fleet(_activator_fleet(not_ready_s=NOT_READY, replace_s=REPLACE)), 1)
    assert out["events"]["node_loss"]["lost_pods"] == 1
    answers = sorted(log["answers"])
    assert len(answers) >= 2                                     # one dial after another while the pod is kept
    for sent, done, status, component in answers:
        assert AT <= sent < AT + NOT_READY                       # only while the Endpoints still list it Ready
        assert (status, component) == (502, "activator")
        assert DIAL_MIN - 1e-9 <= done - sent <= DIAL_MAX + 1e-9
    # The throttler's slot (CC = 1) is held through the dial: the next request goes there only after the 502.
    assert all(nxt[0] >= prev[1] for prev, nxt in zip(answers, answers[1:]))
    attempts = out["services"]["a"]["attempts"]["errors_by_component"]["502"]
    assert attempts["activator"] == len(answers)


def test_the_endpoints_drop_the_lost_pod_when_it_is_not_ready_and_its_replacement_comes_at_replace_s(monkeypatch):
    """Before: one `detect_s` (40 s) took the pod out of the endpoints and created its replacement at once, and the
    dead pod stayed among the KPA's ready pods for the rest of the run."""
    log = _watch(monkeypatch)
    run_fleet(load_fleet(_activator_fleet(not_ready_s=NOT_READY, replace_s=REPLACE)), 1)
    lost = "a-predictor-00000"
    assert [(t, act, k8s) for t, name, act, k8s in log["unready"] if name == lost] == [(AT + NOT_READY, True, True)]
    assert [t for t, name in log["kpa_removed"] if name == lost] == [AT + NOT_READY]
    assert log["created"] == [AT + REPLACE]                      # the ReplicaSet's replacement, nothing earlier


def test_the_replacement_time_is_drawn_from_the_runs_seeded_stream_after_podgcs_quarantine(monkeypatch):
    log = _watch(monkeypatch)
    fleet = _activator_fleet()                                   # not_ready_s 50 (the default), replace_s drawn
    out = run_fleet(load_fleet(fleet), 1)
    drawn = out["events"]["node_loss"]["replace_s"]
    # node deleted within one 5-s pass, PodGC's first pass within 20 s, then its 40-s quarantine
    assert NOT_READY + 40 <= drawn <= NOT_READY + 5 + 20 + 40
    assert log["created"] == [AT + drawn]
    assert json.dumps(run_fleet(load_fleet(fleet), 1), sort_keys=True) == json.dumps(out, sort_keys=True)
    assert len({run_fleet(load_fleet(fleet), s)["events"]["node_loss"]["replace_s"] for s in range(1, 6)}) == 5


def test_a_request_still_dialing_at_the_horizon_is_answered_unanswered_by_the_activator():
    fleet = _activator_fleet(not_ready_s=NOT_READY, replace_s=REPLACE)
    fleet["services"][0]["scenario"]["drain_s"] = 0
    fleet["node_loss"]["at_s"] = fleet["duration_s"] - 5
    report = run_fleet(load_fleet(fleet), 1)["services"]["a"]
    assert report["errors_by_component"]["unanswered"] == {"activator": report["incomplete"]}   # the dial cut off
    assert sum(report["status_counts"].values()) == report["requests"]                        # every one answered


@pytest.mark.parametrize("u, expected", [(0.0, DIAL_MIN), (1.0, DIAL_MAX)])
def test_the_dial_back_off_spans_knatives_sixteen_dials(u, expected):
    class Fixed(random.Random):
        def random(self):
            return u
    assert node_loss.dial_backoff_s(Fixed()) == pytest.approx(expected, abs=1e-9)
    assert 19.8 < DIAL_MIN < 21.0 < DIAL_MAX < 22.3   # not 27.8 s: the last dial's timeout is 50 ms × 1.4^14


def test_detect_s_is_refused_with_the_two_keys_that_replace_it():
    with pytest.raises(InputError) as err:
        load_fleet(_activator_fleet(detect_s=40))
    text = str(err.value)
    assert "node_loss.detect_s: got 40" in text and "not_ready_s" in text and "replace_s" in text
    with pytest.raises(InputError, match=r"node_loss\.replace_s: got 30\.0; expected at least not_ready_s \(50\)"):
        load_fleet(_activator_fleet(replace_s=30))
    assert load_fleet(_activator_fleet(not_ready_s=20, replace_s=30)).node_loss == node_loss.NodeLoss(AT, 20.0, 30.0)

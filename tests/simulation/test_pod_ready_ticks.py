"""When a cold-started pod that has loaded its model turns Ready (simulation/pod.py _app_ready): the kubelet runs
the readiness probe on its worker's ticks, initialDelaySeconds after the container starts and then every
periodSeconds (10 s when unset), so the pod is Ready at the first tick at or after the app can serve, not at that
moment (kubelet prober worker.go). The activator finds a Knative pod by probing it (activator/net/
revision_backends.go, every activator_probe_s), so it routes to it within one probe period after, not at once."""

from __future__ import annotations

import pytest

from simulation import pod as pod_module

from tests.simulation.test_cold_start import one_request

PERIOD_S = 10.0     # the kubelet's periodSeconds default; the scenario's isvc sets no readinessProbe


@pytest.fixture
def ready_times(monkeypatch) -> dict:
    """Per pod: the container start, when the app could serve, and when the activator and the kubelet saw it."""
    seen: dict = {}
    app, act, k8s = pod_module.Pod._app_ready, pod_module.Pod._set_act_ready, pod_module.Pod._set_k8s_ready

    def spy_app(self, initial=False):
        seen.setdefault(self.name, {}).update(start=self.container_start, app=self.env.now)
        app(self, initial)

    def spy(name, original):
        def wrapper(self):
            seen.setdefault(self.name, {}).setdefault(name, self.env.now)
            original(self)
        return wrapper

    monkeypatch.setattr(pod_module.Pod, "_app_ready", spy_app)
    monkeypatch.setattr(pod_module.Pod, "_set_act_ready", spy("act", act))
    monkeypatch.setattr(pod_module.Pod, "_set_k8s_ready", spy("k8s", k8s))
    return seen


def test_a_cold_pod_is_ready_at_the_next_probe_tick_and_found_by_the_activator_within_a_probe(tmp_path, scn,
                                                                                             ready_times):
    d = scn.run(one_request(tmp_path, scn, {"autoscaling.knative.dev/target-utilization-percentage": "100"}))
    assert d["cold_starts"] == 1 and d["status_counts"] == {"200": 1}
    [t] = ready_times.values()
    ticks = (t["k8s"] - t["start"]) / PERIOD_S
    assert ticks == pytest.approx(round(ticks), abs=1e-6)        # on the kubelet's tick grid
    assert t["app"] < t["k8s"] <= t["app"] + PERIOD_S             # the app is ready between two ticks: the next one
    assert t["app"] < t["act"] <= t["app"] + 0.2                  # activator_probe_s 0.2 (test_cold_start.CLUSTER)

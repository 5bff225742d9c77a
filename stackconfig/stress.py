"""`services[].stress`: the gate's stress scenarios for one service, each on by default, each overridable.

    stress:
      spike: {factor: 3, durationS: 120, atS: 120, slo: {p99LatencyS: 90}}
      rollout: {atS: 60, slo: {...}}            # progress deadline: the InferenceService's own annotation
      scaleFromZero: false                      # false (or enabled: false) skips a scenario
      nodeLoss: {atS: 120, notReadyS: 50, replaceS: 100, slo: {maxErrorRate: 0.05}}

nodeLoss: `notReadyS` (50 s, node-monitor-grace-period on Kubernetes >= 1.32) is when the lost node's pods are
marked NotReady and leave the endpoints and the activator; `replaceS` (drawn per run, 90-115 s with the default
notReadyS) is when PodGC deletes them and the ReplicaSet replaces them (simulation/node_loss.py). The old
`detectS`, which stood for both, is refused with a pointer to the two.

`slo` takes the service `slo` keys; what it leaves out is derived from the steady SLO (gate/stress.py).
Stress runs last STRESS_DURATION_S (600 s), so a spike must end and a node be lost within them; a rollout's run
lasts until past its progress deadline (`rollout_run_s`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulation.node_loss import NOT_READY_S
from validation.fields import Section

SLO_KEYS = {"p99LatencyS": "p99_latency_s", "p99TtftS": "p99_ttft_s", "maxErrorRate": "max_error_rate",
            "max503Rate": "max_503_rate", "maxColdStartS": "max_cold_start_s"}
KINDS = ("spike", "rollout", "scaleFromZero", "nodeLoss")


@dataclass(frozen=True)
class StressScenario:
    """One stress scenario's settings: `params` in the simulation's units, `slo` overrides by Slo field name."""

    enabled: bool = True
    params: dict = field(default_factory=dict)
    slo: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StressConfig:
    spike: StressScenario = StressScenario()
    rollout: StressScenario = StressScenario()
    scale_from_zero: StressScenario = StressScenario()
    node_loss: StressScenario = StressScenario()


_FIELDS = {"spike": "spike", "rollout": "rollout", "scaleFromZero": "scale_from_zero", "nodeLoss": "node_loss"}


def scenario_settings(stress: StressConfig, kind: str) -> StressScenario:
    """A service's settings for the gate's stress scenario `kind` (a KINDS name)."""
    return getattr(stress, _FIELDS[kind])


def judged_in(svc: Any, kind: str) -> bool:
    """Whether the gate's stress scenario `kind` judges the service `svc` (one with a workload and an SLO): its
    setting is on and, for a rollout, it runs in Knative mode (a Standard Deployment's rollout is not modelled,
    simulation/stress.py). gate/stress.py builds the scenarios from it; the load-time budget check
    (stackconfig/platform.py) asks it which terms a service will have."""
    return scenario_settings(svc.stress, kind).enabled and (kind != "rollout" or svc.deployment_mode == "Knative")


STRESS_DURATION_S = 600.0   # how long the gate runs a stress scenario (a rollout: `rollout_run_s`)
ROLLOUT_TAIL_S = 60.0       # a rollout's run goes on this long past its progress deadline

# config key → (simulation key, min, max)
_PARAMS = {
    "spike": {"factor": ("factor", 1.0, 100.0), "durationS": ("duration_s", 1.0, STRESS_DURATION_S),
              "atS": ("at_s", 0.0, None)},    # within the run: `_inside_the_run`
    "rollout": {"atS": ("at_s", 0.0, 3600.0)},
    "scaleFromZero": {},
    "nodeLoss": {"atS": ("at_s", 0.0, None), "notReadyS": ("not_ready_s", 0.0, 3600.0),
                 "replaceS": ("replace_s", 0.0, 3600.0)},
}
# what a scenario does where `params` leaves a setting out (simulation keys)
DEFAULTS = {"spike": {"factor": 3.0, "at_s": 120.0, "duration_s": 120.0}, "rollout": {"at_s": 60.0},
            "scaleFromZero": {}, "nodeLoss": {"at_s": 120.0, "not_ready_s": NOT_READY_S}}   # replace_s: drawn
DETECT_SPLIT = ("detectS is gone: it stood for two moments that are far apart. Use notReadyS (loss → the lost "
                f"node's pods NotReady, out of the endpoints and the activator; default {NOT_READY_S:g}, "
                "node-monitor-grace-period on Kubernetes >= 1.32) and replaceS (loss → the pods deleted by PodGC "
                "and replaced; default drawn per run, notReadyS + 40 to 65 s)")


def settings(kind: str, params: dict) -> dict:
    """A scenario's settings: its `params` over the DEFAULTS."""
    return {**DEFAULTS[kind], **params}


def rollout_run_s(at_s: float, progress_deadline_s: float) -> float:
    """How long the gate runs a rollout: past the new revision's progress deadline, and at least a stress run."""
    return max(STRESS_DURATION_S, at_s + progress_deadline_s + ROLLOUT_TAIL_S)


def _inside_the_run(sec: Section, kind: str, params: dict) -> None:
    """A spike must end and a node be lost within the 600-s stress run: one past its end never happens, and the
    run would pass as a plain steady one."""
    s = settings(kind, params)
    run = f"the stress run, which lasts {STRESS_DURATION_S:g} s"
    if kind == "spike" and s["at_s"] + s["duration_s"] > STRESS_DURATION_S:
        if "at_s" in params or "duration_s" not in params:
            sec.problem("atS", s["at_s"], f"expected at most {STRESS_DURATION_S:g} − durationS ({s['duration_s']:g}) "
                        f"= {STRESS_DURATION_S - s['duration_s']:g}: the spike must end within {run}")
        else:
            sec.problem("durationS", s["duration_s"], f"expected at most {STRESS_DURATION_S:g} − atS ({s['at_s']:g}, "
                        f"the default) = {STRESS_DURATION_S - s['at_s']:g}: the spike must end within {run}")
    if kind == "nodeLoss" and s["at_s"] >= STRESS_DURATION_S:
        sec.problem("atS", s["at_s"], f"expected less than {STRESS_DURATION_S:g}: the node must be lost within {run}")
    if kind == "nodeLoss" and s.get("replace_s") is not None and s["replace_s"] < s["not_ready_s"]:
        sec.problem("replaceS", s["replace_s"], f"expected at least notReadyS ({s['not_ready_s']:g}): PodGC deletes "
                    "the pods only after their node is NotReady and deleted")


def _slo(sec: Section) -> dict:
    out = {}
    for key, name in SLO_KEYS.items():
        rate = key.startswith("max") and key.endswith("Rate")
        value = sec.float(key, None, min=0, max=1 if rate else None, min_exclusive=not rate)
        if value is not None:
            out[name] = value
    sec.done()
    return out


def _scenario(parent: Section, kind: str) -> StressScenario:
    raw = parent.raw(kind)
    if raw is None:
        return StressScenario()
    if isinstance(raw, bool):
        return StressScenario(enabled=raw)
    if not isinstance(raw, dict):
        parent.problem(kind, raw, "expected true, false or a mapping of settings and slo")
        return StressScenario()
    sec = parent.section(kind)
    enabled = sec.bool("enabled", True)
    params, before = {}, len(sec.problems)
    if kind == "nodeLoss" and sec.has("detectS"):
        sec.problem("detectS", sec.raw("detectS"), DETECT_SPLIT)
    for key, (name, lo, hi) in _PARAMS[kind].items():
        value = sec.float(key, None, min=lo, max=hi)
        if value is not None:
            params[name] = value
    if len(sec.problems) == before:
        _inside_the_run(sec, kind, params)
    slo = _slo(sec.section("slo"))
    sec.done()
    return StressScenario(enabled, params, slo)


def parse_stress(sec: Section) -> StressConfig:
    """Read `services[].stress`; problems (unknown keys with a hint, ranges, types) go to the section's list."""
    out = StressConfig(_scenario(sec, "spike"), _scenario(sec, "rollout"), _scenario(sec, "scaleFromZero"),
                       _scenario(sec, "nodeLoss"))
    sec.done()
    return out

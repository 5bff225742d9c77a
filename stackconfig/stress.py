"""`services[].stress`: the gate's stress scenarios for one service, each on by default, each overridable.

    stress:
      spike: {factor: 3, durationS: 120, atS: 120, slo: {p99LatencyS: 90}}
      rollout: {atS: 60, slo: {...}}            # progress deadline: the InferenceService's own annotation
      scaleFromZero: false                      # false (or enabled: false) skips a scenario
      nodeLoss: {atS: 120, detectS: 40, slo: {maxErrorRate: 0.05}}

`slo` takes the service `slo` keys; what it leaves out is derived from the steady SLO (gate/stress.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


# config key → (simulation key, min, max)
_PARAMS = {
    "spike": {"factor": ("factor", 1.0, 100.0), "durationS": ("duration_s", 1.0, 3600.0),
              "atS": ("at_s", 0.0, 3600.0)},
    "rollout": {"atS": ("at_s", 0.0, 3600.0)},
    "scaleFromZero": {},
    "nodeLoss": {"atS": ("at_s", 0.0, 3600.0), "detectS": ("detect_s", 0.0, 3600.0)},
}


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
    params = {}
    for key, (name, lo, hi) in _PARAMS[kind].items():
        value = sec.float(key, None, min=lo, max=hi)
        if value is not None:
            params[name] = value
    slo = _slo(sec.section("slo"))
    sec.done()
    return StressScenario(enabled, params, slo)


def parse_stress(sec: Section) -> StressConfig:
    """Read `services[].stress`; problems (unknown keys with a hint, ranges, types) go to the section's list."""
    out = StressConfig(_scenario(sec, "spike"), _scenario(sec, "rollout"), _scenario(sec, "scaleFromZero"),
                       _scenario(sec, "nodeLoss"))
    sec.done()
    return out

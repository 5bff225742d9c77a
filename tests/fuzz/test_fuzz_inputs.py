"""Property: any mutation of a shipped stack or an example scenario is either refused with a clean InputError
whose every problem names a key path, or accepted — and then renders valid manifests (stacks) or simulates to the
end (scenarios). Never another exception, never a hang (each case runs under an alarm).

CI runs a few hundred cases (≈ 30–60 s); a long run:
`FUZZ_EXAMPLES=5000 python3 -m pytest tests/fuzz -p no:randomly`.
`FUZZ_CASE_S` bounds one case (default 30 s of wall time: the CI machine is shared).
"""

from __future__ import annotations

import copy
import math
import os
import signal
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gate import scenario_for
from manifests import render_stack
from simulation import load_scenario, run_simulation
from stackconfig.load import ROOT, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from validation.kubernetes import validation_errors

from fuzz.mutate import mutated

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0"))
CASE_S = int(os.environ.get("FUZZ_CASE_S", "30"))
SCENARIOS = ROOT / "examples" / "scenarios"
SIM_CAP_S = 120.0  # a mutated scenario is simulated for at most this long (its cost is what is under test)


def _settings(ci_examples: int) -> settings:
    return settings(max_examples=EXAMPLES or ci_examples, deadline=None, derandomize=not EXAMPLES, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


@contextmanager
def bounded(seconds: int, what: str):
    """Fail the case (rather than hang the suite) when it runs longer than `seconds`."""
    def alarm(signum, frame):
        raise TimeoutError(f"{what} ran longer than {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check_input_error(err: InputError) -> None:
    assert err.problems, "an InputError without problems"
    for p in err.problems:
        assert isinstance(p.path, str) and p.path.strip(), f"a problem without a key path: {p}"
        assert isinstance(p.allowed, str) and p.allowed.strip(), f"a problem without what is allowed: {p}"
    assert str(err)  # printable, whatever the value (huge ints, cycles …)


def _stack_base(stack: str) -> dict:
    """The shipped stack, with the keys it leaves at their defaults that the mutations should reach too."""
    project, values = stack_config_values(stack)
    out = project_values(values, project)
    out.setdefault("knative", {}).setdefault("version", "1.23")  # knative.version, against cluster.kubernetesVersion
    return out


STACKS = {name: _stack_base(name) for name in ("dev", "staging", "prod")}


@given(st.sampled_from(sorted(STACKS)).flatmap(lambda s: st.tuples(st.just(s), mutated(STACKS[s]))))
@_settings(240)
def test_mutated_stack_configs_fail_cleanly_or_render_valid_manifests(case):
    stack, (values, mutations) = case
    with bounded(CASE_S, f"stack {stack} after {mutations}"):
        try:
            cfg = parse_stack_config(copy.deepcopy(values), "kserve-preflight", stack)
        except InputError as err:
            _check_input_error(err)
            event("refused")
            return
        event("accepted")
        manifests = render_stack(cfg)
        errors = [e for m in manifests for e in validation_errors(m, cfg.cluster.kubernetes_version)]
        assert not errors, f"accepted {mutations} but rendered invalid manifests: {errors}"
        for svc in cfg.services:  # the gate's scenario of every accepted service parses (cheap; no run)
            if svc.workload is not None and svc.slo is not None:
                load_scenario(scenario_for(cfg, svc), base_dir=ROOT)


def _scenario_base(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    full = float(data.get("duration_s", 600))
    data["duration_s"] = min(full, SIM_CAP_S)
    workload = data.get("workload") or {}
    for key in ("at_s", "duration_s"):  # a step or spike keeps its place in the shortened run (one past it is refused)
        if workload.get("kind") in ("step", "spike") and isinstance(workload.get(key), (int, float)):
            workload[key] = workload[key] * data["duration_s"] / full
    data["warmup_s"] = min(float(data.get("warmup_s", 0)), data["duration_s"] / 2)
    return data


def _runnable(data: dict) -> bool:
    """Trace replays need the shared Azure trace (README, "Data"); without it they are left out."""
    workload = data.get("workload") or {}
    return workload.get("kind") != "trace" or (SCENARIOS / workload.get("path", "")).is_file()


# The manifests a scenario names (*.manifest.yaml) are not scenarios.
SCENARIO_BASES = {p.name: base for p in sorted(SCENARIOS.glob("*.yaml")) if not p.name.endswith(".manifest.yaml")
                  for base in [_scenario_base(p)] if _runnable(base)}


@given(st.sampled_from(sorted(SCENARIO_BASES)).flatmap(
    lambda s: st.tuples(st.just(s), mutated(SCENARIO_BASES[s]))))
@_settings(60)
def test_mutated_scenarios_fail_cleanly_or_simulate_to_the_end(case):
    name, (data, mutations) = case
    with bounded(CASE_S, f"scenario {name} after {mutations}"):
        try:
            scenario = load_scenario(copy.deepcopy(data), base_dir=SCENARIOS, max_requests=50_000)
        except InputError as err:
            _check_input_error(err)
            event("refused")
            return
        event("accepted")
        if scenario.duration_s > SIM_CAP_S:  # a mutation may lengthen the run; its cost check is the budget's
            scenario = replace(scenario, duration_s=SIM_CAP_S, warmup_s=min(scenario.warmup_s, SIM_CAP_S / 2))
        scenario = replace(scenario, drain_s=min(scenario.drain_s, 300.0))
        report = run_simulation(scenario, seed=1).to_dict()
        assert report["requests"] >= 0 and not math.isnan(report.get("duration_s", 0.0))


def test_the_unmutated_inputs_are_accepted():
    """Control: the fuzzers start from valid inputs (otherwise every case would be a refusal)."""
    for stack, values in STACKS.items():
        parse_stack_config(copy.deepcopy(values), "kserve-preflight", stack)
    assert len(SCENARIO_BASES) >= 3
    for name, data in SCENARIO_BASES.items():
        load_scenario(copy.deepcopy(data), base_dir=SCENARIOS, max_requests=50_000)


@pytest.mark.parametrize("seconds", [1])
def test_the_alarm_stops_a_hang(seconds):
    """Control for `bounded`: a case that never returns fails instead of hanging the suite."""
    with pytest.raises(TimeoutError, match="a hang"):
        with bounded(seconds, "a sleeping case"):
            while True:
                pass

"""Property: any mutation of the example's KEDA ScaledObject (examples/scenarios/standard-keda.manifest.yaml) is
refused with a clean InputError naming the key, or accepted and simulated to the end — never another exception
(the metric pipeline's reader: scrape-interval annotation, pollingInterval, useCachedMetrics, the query)."""

from __future__ import annotations

import copy

import yaml
from hypothesis import given

from fuzz.mutate import mutated
from fuzz.test_fuzz_inputs import CASE_S, SCENARIOS, _check_input_error, _scenario_base, _settings, bounded
from simulation import load_scenario, run_simulation
from validation.errors import InputError

_DATA = _scenario_base(SCENARIOS / "standard-keda.yaml")   # 120 s, its spike moved inside them
_ISVC, _SO = yaml.safe_load_all((SCENARIOS / _DATA.pop("inferenceServiceFile")).read_text())
_DATA.update(inferenceService=_ISVC, drain_s=60.0)


@given(mutated(_SO))
@_settings(60)
def test_mutated_scaled_objects_fail_cleanly_or_simulate(case):
    so, mutations = case
    with bounded(CASE_S, f"ScaledObject after {mutations}"):
        try:
            scenario = load_scenario(dict(copy.deepcopy(_DATA), hpa=so), base_dir=SCENARIOS, max_requests=50_000)
        except InputError as err:
            _check_input_error(err)
            return
        assert run_simulation(scenario, seed=1).to_dict()["requests"] >= 0


def test_the_unmutated_scaled_object_is_accepted():
    keda = load_scenario(dict(copy.deepcopy(_DATA), hpa=_SO), base_dir=SCENARIOS).serving.hpa.keda
    assert (keda.kind, keda.scrape_interval_s) == ("gauge", 30.0)

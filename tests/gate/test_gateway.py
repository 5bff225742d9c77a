"""A service's `gateway` (the ingress in front of it: a rate limit answering 429, a route timeout answering 504)
reaches the gate's simulation, checked at load with the simulation's own parser."""

from __future__ import annotations

import pulumi
import pytest

import gate
from offline import run_program
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"


def _dev(gateway: dict):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["services"][0]["gateway"] = gateway
    return parse_stack_config(values, project, "dev")


def test_a_gateway_rate_limit_below_the_load_fails_the_gate_with_429s():
    """dev's chat gets 0.5 req/s; a gateway admitting 0.1 req/s answers most of them 429."""
    cfg = _dev({"rate_limit": {"rate_per_s": 0.1, "burst": 2}})
    assert gate.scenario_for(cfg, cfg.services[0])["gateway"] == {"rate_limit": {"rate_per_s": 0.1, "burst": 2}}
    verdict = gate.check_service(cfg, cfg.services[0])
    assert not verdict.passed and any("error rate" in m for m in verdict.misses())
    assert verdict.report["status_counts"].get("429", 0) > verdict.report["status_counts"].get("200", 0)
    roomy = _dev({"rate_limit": {"rate_per_s": 50, "burst": 50}})  # control: a limit far above the load
    assert gate.check_service(roomy, roomy.services[0]).passed


def test_a_gateway_timeout_below_the_latency_answers_504():
    cfg = _dev({"timeout_s": 0.5})
    report = gate.check_service(cfg, cfg.services[0]).report
    assert report["status_counts"].get("504", 0) > 0


@pytest.mark.parametrize("gateway, message", [
    ({"rate_limit": {"burst": 2}}, r"services\[0\]\.gateway\.rate_limit\.rate_per_s"),
    ({"timeout_s": -1}, r"services\[0\]\.gateway\.timeout_s: got -1"),
    ({"timeout": 30}, r"services\[0\]\.gateway\.timeout"),
])
def test_a_bad_gateway_is_refused_at_load_with_its_key_path(gateway, message, registered):
    with pytest.raises(InputError, match=message):
        _dev(gateway)
    with pytest.raises(pulumi.RunError, match=message):
        run_program("dev", edit=lambda c: c[f"{P}:services"][0].__setitem__("gateway", gateway))
    assert registered == []

"""Flags that would move the server off the pod IP's port 8080, or open a second listener on a port the pod
already uses in its deployment mode (simulation/pod_ports.py; review rev12-runtimes F2, rev12-diff F2/F8)."""

from __future__ import annotations

import pytest

from gate import scenario_for
from simulation import load_scenario
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from runtime_stack import OPENAI, refused, rt_cfg, sim_spec


# --- flags that move the server off the pod IP's port 8080 (rev12-runtimes F2) ----------------------------------------
@pytest.mark.parametrize("runtime, arg, why", [
    ({"engine": "vllm"}, "--http_port=9000", "expected 8080, KServe's default"),
    ({"engine": "naive"}, "--http_port=8081", "expected 8080, KServe's default"),
    ({"engine": "vllm"}, "--grpc_port=8080", "other than 8080 (the server's HTTP port"),
    ({"engine": "naive"}, "--grpc_port=8012", "and the queue-proxy's own (8008, 8012, 8013, 8022, 8112, 9090, 9091"),
    ({"engine": "vllm", "image": OPENAI}, "--host=127.0.0.1", "expected 0.0.0.0 or :: (every address)"),
    ({"engine": "vllm", "image": OPENAI}, "--host=localhost", "expected 0.0.0.0 or :: (every address)"),
    ({"engine": "tgi"}, "--hostname=127.0.0.1", "expected 0.0.0.0 or :: (every address)"),
    ({"engine": "tgi"}, "--prometheus-port=8080", "other than 8080 (the server's HTTP port"),
    ({"engine": "tgi"}, "--prometheus-port=9091", "and the queue-proxy's own"),
    ({"engine": "tgi"}, "--master-port=8022", "and the queue-proxy's own"),
])
def test_a_port_or_address_flag_that_moves_the_server_or_collides_is_refused(runtime, arg, why):
    """r10: each was accepted as neutral; the server then listened where no probe, queue-proxy or Service looks,
    or a second listener failed to bind (kserve model_server.py: gRPC on by default, 8081)."""
    text = refused(rt_cfg({**runtime, "args": [arg]}, gpus=2))
    assert f"services[0].runtime.args: got '{arg}'; expected" in text and why in text


@pytest.mark.parametrize("runtime, args", [
    ({"engine": "vllm"}, ["--http_port=8080", "--grpc_port=8081", "--host=127.0.0.1"]),   # KServe ignores --host
    ({"engine": "naive"}, ["--http_port", "8080", "--grpc_port=9000"]),
    ({"engine": "vllm", "image": OPENAI}, ["--host=0.0.0.0"]),
    ({"engine": "vllm", "image": OPENAI}, ["--host", "::"]),
    ({"engine": "tgi"}, ["--hostname=::", "--prometheus-port=9000", "--master-port=29501"]),
    ({"engine": "tgi"}, ["--hostname=chat-predictor-0"]),   # not an IP: TGI's router listens on 0.0.0.0
])
def test_port_and_address_flags_that_keep_the_server_on_8080_are_accepted(runtime, args):
    sim_spec(rt_cfg({**runtime, "args": args}, gpus=2))


def test_tgi_reads_its_address_and_port_variables_too():
    """clap `#[clap(long, env)]`: HOSTNAME and PROMETHEUS_PORT set what the flags set."""
    text = refused(rt_cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "8080", "HOSTNAME": "127.0.0.1"}}))
    assert "services[0].runtime.env.PROMETHEUS_PORT: got '8080'; expected a port, 0 to 65535, other than 8080" in text
    assert "services[0].runtime.env.HOSTNAME: got '127.0.0.1'; expected 0.0.0.0 or ::" in text
    spec = sim_spec(rt_cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "9001", "HOSTNAME": "0.0.0.0"}}))
    assert spec == sim_spec(rt_cfg({"engine": "tgi"}))   # checked only: nothing simulated changes


def test_the_serving_port_is_taken_in_both_modes():
    from simulation.pod_ports import taken_ports
    from validation.defaults import SERVING_PORT

    assert SERVING_PORT in taken_ports("Knative") and SERVING_PORT in taken_ports("Standard")


# --- one rule for the ports the pod already uses, by deployment mode (rev12-diff F2/F8) -------------------------------
def _in(mode: str, cfg: dict) -> dict:
    cfg["services"][0]["deploymentMode"] = mode
    return cfg


@pytest.mark.parametrize("runtime, arg", [
    ({"engine": "vllm"}, "--grpc_port=8012"),
    ({"engine": "naive"}, "--grpc_port=9091"),
    ({"engine": "tgi"}, "--prometheus-port=8013"),
    ({"engine": "tgi"}, "--master-port=9090"),
])
def test_a_listener_on_a_queue_proxy_port_is_refused_in_knative_mode_only(runtime, arg):
    """Standard (RawDeployment) mode runs no queue-proxy: 8012, 9091 … are free there, and were refused."""
    text = refused(_in("Knative", rt_cfg({**runtime, "args": [arg]}, gpus=2)))
    assert f"got '{arg}'; expected a port, 0 to 65535, other than 8080" in text
    assert "and the queue-proxy's own (8008, 8012, 8013, 8022, 8112, 9090, 9091" in text
    sim_spec(_in("Standard", rt_cfg({**runtime, "args": [arg]}, gpus=2)))


@pytest.mark.parametrize("mode", ["Knative", "Standard"])
def test_a_listener_on_the_serving_port_is_refused_in_either_mode(mode):
    text = refused(_in(mode, rt_cfg({"engine": "vllm", "args": ["--grpc_port=8080"]})))
    assert "got '--grpc_port=8080'; expected a port, 0 to 65535, other than 8080 (the server's HTTP port" in text
    assert f"which the pod already uses in {mode} mode" in text
    text = refused(_in(mode, rt_cfg({"engine": "tgi", "env": {"MASTER_PORT": "8080"}})))
    assert "services[0].runtime.env.MASTER_PORT: got '8080'; expected a port, 0 to 65535, other than 8080" in text


def test_tgis_port_variables_follow_the_mode_too():
    text = refused(_in("Knative", rt_cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "8012"}})))
    assert "services[0].runtime.env.PROMETHEUS_PORT: got '8012'; expected a port" in text
    sim_spec(_in("Standard", rt_cfg({"engine": "tgi", "env": {"PROMETHEUS_PORT": "8012"}})))


def test_a_scenario_manifest_is_held_to_the_ports_of_its_own_mode():
    """The scenario's ServingSpec knows the mode: a Standard-mode manifest may listen on 8012, a Knative one not."""
    for mode, refused_too in (("Knative", True), ("Standard", False)):
        stack = parse_stack_config(_in(mode, rt_cfg({"engine": "vllm"})), "p", "dev")
        scenario = scenario_for(stack, stack.services[0])
        scenario["inferenceService"]["spec"]["predictor"]["model"]["args"].append("--grpc_port=8012")
        if refused_too:
            with pytest.raises(InputError) as err:
                load_scenario(scenario)
            assert "model.args: got '--grpc_port=8012'; expected a port" in str(err.value)
        else:
            load_scenario(scenario)

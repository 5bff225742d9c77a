"""A serving container's memory and CPU have a floor (stackconfig/resource_floors.py): Kubernetes takes "24" as
24 bytes, runc OOM-kills the container as it starts ("container init was OOM-killed") and the rollout strands for
its progress deadline; `preflight check` used to pass it (review rev-fuzz finding 2). The memory floor is 1Gi, for
the unit mistakes; 1Gi-2Gi (below KServe's shipped 2Gi) is accepted (review rev-diff finding 7)."""

from __future__ import annotations

import pytest

from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from tests.program_refusal import refusal
from validation.errors import InputError

P = "kserve-preflight"


def _parse(stack: str, edit) -> str | None:
    """The refusal's message, or None when the edited stack is accepted."""
    project, raw = stack_config_values(stack)
    values = project_values(raw, project)
    edit(values)
    try:
        parse_stack_config(values, project, stack)
    except InputError as err:
        return str(err)
    return None


def _resources(index: int, **resources):
    def edit(values):
        values["services"][index]["resources"].update(resources)
    return edit


@pytest.mark.parametrize("memory,in_bytes", [("24", "24 bytes"), ("24M", "24,000,000 bytes (22.89 MiB)"),
                                             ("100m", "1 byte (0.1, rounded up)"), ("1Ki", "1,024 bytes (1 KiB)"),
                                             ("512Mi", "536,870,912 bytes (512 MiB)"),
                                             ("1000M", "1,000,000,000 bytes (954 MiB)"),
                                             ("1023Mi", "1,072,693,248 bytes (1,023 MiB)")])
def test_an_llm_server_memory_below_1gi_is_refused_with_its_bytes(memory, in_bytes):
    message = _parse("dev", _resources(0, memory=memory))  # chat: vllm
    assert message is not None
    assert (f"{P}:services[0].resources.memory: got {memory!r}; expected at least 1Gi (1,073,741,824 bytes) for "
            f"runtime.engine vllm: {memory!r} is {in_bytes}, which is taken for a unit left out. KServe ships its "
            "runtimes with 2Gi, and below that the server's CUDA context, torch and tokenizer are not expected to "
            "fit") in message
    assert "OOM-killed" in message


@pytest.mark.parametrize("memory", ["1Gi", "2G", "2000Mi", "1.9Gi", "2047Mi", "1.5Gi"])
def test_a_memory_from_1gi_up_is_accepted(memory):
    """Review rev-diff finding 7: "2G", "2000Mi" and "1.9Gi" (deliberate values a few percent below KServe's 2Gi)
    were refused with a claim that the server is OOM-killed, and "1.9Gi" printed as "2.04011e+09 bytes"."""
    assert _parse("dev", _resources(0, memory=memory)) is None


def test_a_fractional_quantity_is_printed_as_whole_bytes():
    """Kubernetes rounds a quantity up to a whole byte (Quantity.Value()); no float notation in the message."""
    from stackconfig.resource_floors import _bytes
    from catalog.allocatable import quantity
    assert _bytes(quantity("1.9Gi")) == "2,040,109,466 bytes (1.9 GiB)"
    assert _bytes(quantity("2G")) == "2,000,000,000 bytes (1.863 GiB)"
    assert _bytes(quantity("0.5Gi")) == "536,870,912 bytes (512 MiB)"
    message = _parse("dev", _resources(0, memory="0.9Gi"))
    assert "'0.9Gi' is 966,367,642 bytes (922 MiB)" in message and "e+" not in message


def test_a_memory_without_a_unit_gets_the_bytes_hint():
    message = _parse("dev", _resources(0, memory="24"))
    assert "a quantity without a unit is bytes: did you mean 24Gi?" in message
    assert "did you mean 24Mi?" in _parse("dev", _resources(0, memory="24m"))  # milli, not Mi
    assert "did you mean" not in _parse("dev", _resources(0, memory="24M"))  # a unit, only too small


@pytest.mark.parametrize("engine", ["tgi", "naive"])
def test_every_llm_engine_has_the_1gi_floor(engine):
    def edit(values):
        values["services"][0]["runtime"] = {"engine": engine}
        values["services"][0]["resources"]["memory"] = "1000Mi"
    message = _parse("dev", edit)
    assert message is not None and f"expected at least 1Gi (1,073,741,824 bytes) for runtime.engine {engine}" in message


def test_the_floors_are_the_least_accepted():
    assert _parse("dev", _resources(0, memory="1Gi")) is None
    assert _parse("staging", _resources(1, memory="1Gi")) is None  # vision: triton
    message = _parse("staging", _resources(1, memory="1000Mi"))
    assert "services[1].resources.memory: got '1000Mi'; expected at least 1Gi (1,073,741,824 bytes) for " \
           "runtime.engine triton" in message and "CUDA context and backends" in message
    from stackconfig.resource_floors import SERVING_MEMORY_FLOOR
    from stackconfig.services import ENGINES
    assert set(SERVING_MEMORY_FLOOR) == set(ENGINES)


@pytest.mark.parametrize("cpu", ["1m", "99m", "0.05", "0"])
def test_a_serving_cpu_below_100m_is_refused(cpu):
    message = _parse("dev", _resources(0, cpu=cpu))
    assert message is not None
    assert f"{P}:services[0].resources.cpu: got {cpu!r}; expected at least 100m (a tenth of a core)" in message


def test_the_cpu_floor_names_the_kubelets_smallest_quota():
    """Below 10m the kubelet writes its smallest CFS quota, 1 ms per 100 ms (milliCPUToQuota)."""
    assert "a CFS quota of 1 ms per 100 ms, under which an engine start-up of 60 s on a core takes 6,000 s" in \
        _parse("dev", _resources(0, cpu="1m"))
    assert _parse("dev", _resources(0, cpu="100m")) is None


def _daemonsets(memory):
    def edit(values):
        values["gpuNodeGroup"]["otherDaemonSets"] = {"cpu": "200m", "memory": memory}
    return edit


def test_other_daemonsets_memory_without_a_unit_is_refused():
    """A sum of memory requests of a few bytes lets a pod that does not fit pass the fit check."""
    message = _parse("dev", _daemonsets("512"))
    assert (f"{P}:gpuNodeGroup.otherDaemonSets.memory: got '512'; expected 0 or at least 1Mi (1,048,576 bytes)"
            in message)
    assert "did you mean 512Mi?" in message
    assert _parse("dev", _daemonsets("100m")) is not None
    for fine in ("0", "1Mi", "512Mi"):
        assert _parse("dev", _daemonsets(fine)) is None


def test_the_program_refuses_a_memory_of_24_bytes_before_registering_anything(registered):
    def edit(config):
        config[f"{P}:services"][0]["resources"]["memory"] = "24"
    message = refusal("dev", edit, registered)
    assert "services[0].resources.memory: got '24'" in message and "did you mean 24Gi?" in message

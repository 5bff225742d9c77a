"""The typed stack config: everything the Pulumi program reads, parsed and checked in one place.

`parse_stack_config` returns a `StackConfig` or raises `InputError` listing every problem with its key path, value
and what is allowed; nothing is registered before. Each section is read by the module named for it (`cluster`,
`services`, `autoscaling`, `platform`, `catalog_overrides`); the types live in `stackconfig.types`.
"""

from __future__ import annotations

from typing import Any, Mapping

from stackconfig.autoscaling import initial_scale_problems, traffic_shape
from stackconfig.catalog_overrides import parse_catalog
from stackconfig.cluster import (GPU_LABEL, check_knative_floor, check_node_group_name, node_group_name_prefix,
                                 parse_cluster, parse_node_group)
from stackconfig.formats import SERVICE_NAME, check_raw_host, matches
from stackconfig.knative import max_scale_problems, parse_knative
from stackconfig.kserve import parse_kserve
from stackconfig.model_credentials import check_one_secret_kind
from stackconfig.platform import (check_gate_budget, check_model_cache, expected_load_s, parse_cold_start,
                                  parse_device_plugin, parse_gate, parse_model_cache)
from stackconfig.gate_runs import check_gate_runs
from stackconfig.services import PROJECT_ROOT, parse_service, startup_at_first_deploy
from stackconfig.types import (ClusterConfig, ColdStartProfile, DevicePluginConfig, GateConfig, InputCaps,
                               ModelCacheConfig, NodeGroupConfig, Probe, ServiceConfig, Slo, StackConfig,
                               StackConfigContext, Taint, Toleration)
from validation.errors import InputError, Problem
from validation.fields import Section
from validation.kubernetes import GPU_RESOURCE

__all__ = ["GPU_LABEL", "GPU_RESOURCE", "PROJECT_ROOT", "ClusterConfig", "ColdStartProfile", "DevicePluginConfig",
           "GateConfig", "InputCaps", "ModelCacheConfig", "NodeGroupConfig", "Probe", "ServiceConfig", "Slo",
           "StackConfig", "Taint", "Toleration", "expected_load_s", "node_group_name_prefix", "parse_stack_config",
           "traffic_shape"]


ENVIRONMENTS = ("dev", "staging", "prod")
# The project's top-level keys, as `parse_stack_config` reads them (stackconfig/load.py names them in a hint when
# one comes under a misspelt namespace).
SECTIONS = ("environment", "catalog", "cluster", "gpuNodeGroup", "devicePlugin", "modelCache", "coldStart", "knative",
            "kserve", "services", "gate")


def _environment(top: Section, stack: str) -> str:
    """`environment`, by default the stack's name; required for a stack named otherwise (`production`, `prod-eu`):
    guessing `dev` there would drop prod's refusals and the node group's `protect` without a word."""
    if stack not in ENVIRONMENTS and top.raw("environment") is None:
        top.choice("environment", ENVIRONMENTS)   # marks the key read
        top.problem("environment", None, f"expected one of {', '.join(ENVIRONMENTS)}: required for a stack named "
                    f"{stack!r} (the default is the stack's name only for a stack named dev, staging or prod)")
        return "dev"   # to read on; the problem refuses the config
    return top.choice("environment", ENVIRONMENTS, stack if stack in ENVIRONMENTS else "dev")


def parse_stack_config(values: Mapping[str, Any], project: str, stack: str, source: str = "") -> StackConfig:
    """Parse the project's config values (keys without the `<project>:` prefix, values already decoded)."""
    problems: list[Problem] = []
    top = Section(dict(values), "", problems)
    catalog = parse_catalog(top.section("catalog"))
    environment = _environment(top, stack)
    cluster = parse_cluster(top.section("cluster", required=True), project)
    node_group = parse_node_group(top.section("gpuNodeGroup"), catalog)
    check_node_group_name(cluster, node_group, problems)
    device_plugin = parse_device_plugin(top.section("devicePlugin"))
    model_cache = parse_model_cache(top.section("modelCache"), cluster.namespace)
    cold_start = parse_cold_start(top.section("coldStart"), model_cache.enabled)
    knative = parse_knative(top.section("knative"))  # before the services: their annotations meet its autoscaler
    kserve = parse_kserve(top.section("kserve"))  # and its version decides what KServe does with their runtime
    ctx = StackConfigContext(environment, cluster, node_group, model_cache, cold_start, catalog, knative, kserve)
    service_secs = top.sections("services", required=True)
    services = startup_at_first_deploy(service_secs, [parse_service(s, ctx) for s in service_secs], ctx)
    gate = parse_gate(top.section("gate"))
    if any(s.deployment_mode == "Knative" for s in services):   # a Standard-only stack needs no Knative (README)
        check_knative_floor(cluster, knative.version, problems)  # the Kubernetes its release starts on
    for i, svc in enumerate(services):  # the predictor host KServe builds in Standard mode (needs both sections)
        if svc.deployment_mode == "Standard" and matches(SERVICE_NAME, svc.name):
            check_raw_host(lambda *p: problems.append(Problem(*p)), f"services[{i}].name", svc.name,
                           cluster.namespace, kserve.domain_template, kserve.ingress_domain)
    max_scale_problems(knative, services, problems)
    initial_scale_problems(knative.autoscaler, services, problems)
    if not problems:  # the workloads parsed cleanly: estimate what the gate would simulate
        check_gate_runs(services, gate, problems, str(PROJECT_ROOT),
                        scale_to_zero=knative.autoscaler.enable_scale_to_zero)
        check_gate_budget(gate, services, problems)
    names = [s.name for s in services]
    for i, name in enumerate(names):
        if name and names.index(name) != i:
            problems.append(Problem(f"services[{i}].name", name, "expected a unique service name"))
    if not services and not any(p.path == "services" for p in problems):
        problems.append(Problem("services", [], "expected at least one service"))
    if model_cache.enabled:
        check_model_cache(model_cache, cluster, services, problems)
    check_one_secret_kind(model_cache, services, problems)
    min_gpus = sum(s.min_replicas * s.gpus for s in services)
    if min_gpus > node_group.gpu_capacity:
        problems.append(Problem("services[*].minReplicas", min_gpus, f"expected the services' minReplicas to need "
                                f"at most the node group's {node_group.gpu_capacity} GPUs (maxSize × GPUs per node)"))
    top.done()
    # Project keys are namespaced: report a typo as `<project>:<key>` like `pulumi config` shows it.
    if problems:
        raise InputError([Problem(f"{project}:{p.path}", p.value, p.allowed) for p in problems], source)
    return StackConfig(project, stack, environment, cluster, node_group, device_plugin, model_cache, cold_start,
                       services, gate, catalog, knative, kserve, source=source)

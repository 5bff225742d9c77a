"""Where the user fixes a violation: the stack file and the `<project>:<key path>` they edit, not only the
generated resource the rule judged.

The rules see the resources the program registers (what CrossGuard sees). The report knows the stack's config too,
so it maps each violation back: a service's resources (`<service>-isvc`, `-hpa`, `-scaledobject`, components/
inference_service.py) to `services[i]`, each rule to the service key it asks for, the platform resources to their
section, and a model-cache prefetch finding about an hf:// URI to the services whose `model.storageUri` it is.
Resources the program alone writes (the model-cache PVC, its readiness probe, labels) have no key: the message says
what the program got wrong.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Mapping

from policy.registry import RULES
from policy.resources import Violation
from policy.waivers import NOT_WAIVABLE, waivers_of
from stackconfig.load import project_values, stack_config_values, stack_file
from validation.errors import InputError, Problem

# rule id -> the service key it asks for (the stack config's spelling, stackconfig/services.py)
SERVICE_KEYS = {
    "isvc-container-concurrency": "containerConcurrency",
    "isvc-prod-min-replicas": "minReplicas",
    "isvc-scale-metric": "scaleMetric",
    "isvc-max-replicas": "maxReplicas",
    "isvc-gpu-limit": "resources.gpus",
    "isvc-serving-memory": "resources.memory",
    "gpu-taint-tolerated": "tolerations",
    "isvc-gpu-node-selector": "nodeSelector",
    "isvc-startup-probe": "probes.startup",
    "isvc-readiness-probe": "probes.readiness",
    "isvc-timeout": "timeout",
    "isvc-input-caps": "limits.maxInputTokens",
    "isvc-batch-caps": "limits.maxBatchSize",
    "isvc-pytorch-alloc-conf": "pytorchCudaAllocConf",
    "isvc-server-admission-limit": "limits.maxConcurrentRequests",
    "image-tag-pinned": "runtime.image",
    "model-revision-pinned": "model.storageUri",
    "k8s-resources": "resources",
}
# (runtime.engine, rule id) -> the service key, where the engine's cap is another key: Triton's input cap is
# config.pbtxt's declared image size, rendered from limits.maxImagePixels (policy/rules_server.py isvc-input-caps)
ENGINE_SERVICE_KEYS = {("triton", "isvc-input-caps"): "limits.maxImagePixels"}
# rule id -> the platform key (or None: the program writes it, the user has no key for it)
PLATFORM_KEYS = {
    "nodegroup-gpu-taint": "gpuNodeGroup.taints",
    "nodegroup-capacity": "gpuNodeGroup.maxSize",
    "nodegroup-fits-peak": "gpuNodeGroup.maxSize",
    "gpu-taint-tolerated": "gpuNodeGroup.taints",
}
RESOURCE_SECTIONS = {"nvidia-ds": "devicePlugin", "model-cache-prefetch": "modelCache"}
SECTION_KEYS = {("devicePlugin", "image-tag-pinned"): "devicePlugin.image",
                ("modelCache", "image-tag-pinned"): "modelCache.prefetchImage"}
SERVICE_SUFFIXES = ("-isvc", "-hpa", "-scaledobject")
_URI = re.compile(r"hf://[^\s,;]+")


def service_index(resource_name: str, services: list[Mapping[str, Any]]) -> int | None:
    for i, svc in enumerate(services):
        if any(resource_name == f"{svc.get('name')}{suffix}" for suffix in SERVICE_SUFFIXES):
            return i
    return None


def _service_key(rule: str, svc: Mapping[str, Any]) -> str:
    if rule == "isvc-scale-down-stabilization":   # Knative: the annotations; Standard: the HPA's behaviour
        return "hpa.behavior" if svc.get("deploymentMode") == "Standard" else "annotations"
    runtime = svc.get("runtime")
    engine = runtime.get("engine") if isinstance(runtime, Mapping) else None
    return ENGINE_SERVICE_KEYS.get((engine, rule)) or SERVICE_KEYS.get(rule, "")


def keyed(violation: Violation, project: str, values: Mapping[str, Any], stack_file: str) -> Violation:
    """`violation` with `stack_file`, `service` and `key` (`<project>:services[i].timeout`) filled in."""
    services = [s for s in (values.get("services") or []) if isinstance(s, Mapping)]
    out = dataclasses.replace(violation, stack_file=stack_file)
    i = service_index(violation.resource_name, services)
    if i is not None:
        sub = _service_key(violation.rule, services[i])
        key = f"{project}:services[{i}]" + (f".{sub}" if sub else "")
        return dataclasses.replace(out, service=str(services[i].get("name")), key=key)
    if violation.rule == "model-revision-pinned":   # the prefetch list: the services whose storageUri it is
        uris = {u.rstrip(".") for u in _URI.findall(violation.message)}
        hits = [(i, s) for i, s in enumerate(services)
                if str((s.get("model") or {}).get("storageUri", "")) in uris]
        if hits:
            return dataclasses.replace(out, service=", ".join(str(s.get("name")) for _, s in hits),
                                       key=", ".join(f"{project}:services[{i}].model.storageUri" for i, _ in hits))
    section = RESOURCE_SECTIONS.get(violation.resource_name)
    sub = SECTION_KEYS.get((section, violation.rule)) or PLATFORM_KEYS.get(violation.rule)
    return dataclasses.replace(out, key=f"{project}:{sub}") if sub else out


def with_keys(violations: Iterable[Violation], project: str, values: Mapping[str, Any],
              stack_file: str) -> list[Violation]:
    """Every violation with its stack file and, where the user has one, its stack key (`keyed`)."""
    return [keyed(v, project, values, stack_file) for v in violations]


def stack_keys(violations: Iterable[Violation], stack: str, stack_dir: Any = None,
               resources: Iterable[Any] = ()) -> list[Violation]:
    """`with_keys` for `stack` as read from its settings file (`stacks/` or `stack_dir`). Raises InputError when a
    waiver on one of `resources` names an unknown rule or one that may not be waived (policy/waivers.py)."""
    project, values = stack_config_values(stack, stack_dir=stack_dir)
    values, source = project_values(values, project), stack_file(stack, stack_dir=stack_dir)
    problems = waiver_problems(resources, project, values)
    if problems:
        raise InputError(problems, source)
    return with_keys(violations, project, values, source)


def waiver_problems(resources: Iterable[Any], project: str, values: Mapping[str, Any]) -> list:
    """A problem per waiver that names no rule or one that may not be waived, at its stack key."""
    ids = {r.id for r in RULES}
    services = [s for s in (values.get("services") or []) if isinstance(s, Mapping)]
    out = []
    for res in resources:
        for rule_id, reason in waivers_of(res).items():
            if rule_id in ids and rule_id not in NOT_WAIVABLE:
                continue
            i = service_index(res.name, services)
            where = f"{project}:services[{i}]" if i is not None else res.name
            allowed = (f"expected a rule that may be waived: {rule_id} is a Pod Security rule"
                       if rule_id in ids else "expected a policy rule id (python -m policy.report --rules)")
            out.append(Problem(f"{where}.policyWaivers.{rule_id}", reason, allowed))
    return out

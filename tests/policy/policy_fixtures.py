"""Policy fixtures: the resources (real program under mocks) of a frozen copy of the shipped stacks, and
deliberately bad variants.

The rule unit tests read `tests/policy/fixtures/Pulumi.<stack>.yaml`, never `stacks/`: a team that renames prod's
`chat`, deletes dev or accepts an advisory finding in its own stacks must not fail the project's rule tests. Its own
stacks are judged by the CI check, `python -m policy.report` (or `tests/policy/test_stacks.py`).

`BAD` maps every rule id to one mutation of the prod stack that breaks that rule, plus a fragment of the message
the rule must print. Mutations are on copies of the recorded wire-format inputs, which is what CrossGuard sees
(the stack config would reject many of these before any resource is registered, which is the config's job).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from pathlib import Path
from typing import Callable, Optional

import yaml

from policy.rules import Resource
from policy.stack import stack_resources
from stackconfig.load import stack_names

FIXTURES = Path(__file__).resolve().parent / "fixtures"   # frozen copies of stacks/Pulumi.{dev,staging,prod}.yaml
SHIPPED = stack_names(stack_dir=FIXTURES)


@functools.lru_cache(maxsize=None)
def _shipped(stack: str) -> tuple[Resource, ...]:
    # the SLO gate off: a stack that misses its SLO still gets its findings
    return tuple(stack_resources(stack, stack_dir=FIXTURES))


def shipped(stack: str) -> list[Resource]:
    """A deep copy of the stack's resources, safe to mutate."""
    return [dataclasses.replace(r, props=copy.deepcopy(r.props)) for r in _shipped(stack)]


class Stack:
    """Mutable view of a resource list by Pulumi resource name."""

    def __init__(self, resources: list[Resource]) -> None:
        self.resources = resources

    def get(self, name: str) -> Resource:
        return next(r for r in self.resources if r.name == name)

    def props(self, name: str) -> dict:
        return self.get(name).props  # type: ignore[return-value]

    def pred(self, name: str) -> dict:
        return self.props(name)["spec"]["predictor"]

    def model(self, name: str) -> dict:
        return self.pred(name)["model"]

    def pod(self, name: str) -> dict:
        return self.props(name)["spec"]["template"]["spec"]

    def container(self, name: str) -> dict:
        return self.pod(name)["containers"][0]

    def set_options(self, name: str, **changes) -> None:
        i = next(i for i, r in enumerate(self.resources) if r.name == name)
        self.resources[i] = dataclasses.replace(self.resources[i], **changes)


def _drop_args(container: dict, prefixes: tuple[str, ...], env: tuple[str, ...]) -> None:
    container["args"] = [a for a in container.get("args", []) if not a.startswith(prefixes)]
    container["env"] = [e for e in container.get("env", []) if e["name"] not in env]


def _env_cap_only(container: dict, flag: str, env: str) -> None:
    """Drop the runtime's cap flag and put the cap in an environment variable no runtime reads."""
    _drop_args(container, (flag,), ())
    container["env"] = container.get("env", []) + [{"name": env, "value": "4096"}]


def _del_ann(s: Stack, name: str, *keys: str) -> None:
    for key in keys:
        s.props(name)["metadata"]["annotations"].pop(key, None)


def _tgi_admitting(s: Stack, name: str, limit: int) -> None:
    """The service as TGI whose router admits `limit` requests (--max-concurrent-requests)."""
    s.props(name)["metadata"]["annotations"]["preflight.kserve.io/engine"] = "tgi"
    model = s.model(name)
    model["args"] = list(model.get("args", [])) + [f"--max-concurrent-requests={limit}"]


Mutation = Callable[[Stack], None]

# rule id → (mutation of prod, fragment of the expected message)
BAD: dict[str, tuple[Mutation, str]] = {
    "isvc-container-concurrency": (lambda s: s.pred("chat-isvc").pop("containerConcurrency"),
                                   "containerConcurrency is unset (unlimited)"),
    "isvc-prod-min-replicas": (lambda s: s.pred("chat-isvc").update(minReplicas=0.0),
                               "minReplicas is 0 in prod"),
    "isvc-scale-metric": (lambda s: s.pred("chat-isvc").update(scaleMetric="cpu"), "scales on 'cpu'"),
    "isvc-max-replicas": (lambda s: s.pred("code-isvc").update(maxReplicas=40.0),
                          "node group holds at most 28"),
    "isvc-gpu-limit": (lambda s: s.model("code-isvc")["resources"]["limits"].pop("nvidia.com/gpu"),
                       "no container has resources.limits[\"nvidia.com/gpu\"]"),
    "isvc-serving-memory": (lambda s: s.model("code-isvc")["resources"]["limits"].update(memory="1536Mi"),
                            "memory 1536Mi is below the 2Gi"),
    "gpu-taint-tolerated": (lambda s: s.pred("chat-isvc").update(tolerations=[]),
                            "does not tolerate the GPU node taint nvidia.com/gpu=true:NoSchedule"),
    "isvc-gpu-node-selector": (lambda s: s.pred("chat-isvc").update(nodeSelector={}), "no GPU node selector"),
    "isvc-startup-probe": (lambda s: s.model("chat-isvc")["startupProbe"].update(failureThreshold=1.0),
                           "startupProbe budget is 0 s"),
    "isvc-readiness-probe": (lambda s: s.model("code-isvc").pop("readinessProbe"), "no readinessProbe"),
    "isvc-timeout": (lambda s: s.pred("code-isvc").update(timeout=900.0),
                     "above Knative's max-revision-timeout-seconds (600 s)"),
    "isvc-input-caps": (lambda s: _env_cap_only(s.model("chat-isvc"), "--max-model-len", "MAX_INPUT_TOKENS"),
                        "no input cap"),
    "isvc-batch-caps": (lambda s: _env_cap_only(s.model("code-isvc"), "--max-num-seqs", "MAX_BATCH_SIZE"),
                        "no batch cap"),
    "isvc-pytorch-alloc-conf": (lambda s: _drop_args(s.model("code-isvc"), (), ("PYTORCH_CUDA_ALLOC_CONF",)),
                                "PYTORCH_CUDA_ALLOC_CONF is not set"),
    "isvc-server-admission-limit": (lambda s: _tgi_admitting(s, "chat-isvc", 2),
                                    "TGI's --max-concurrent-requests is 2, below the"),
    "isvc-scale-down-stabilization": (
        lambda s: _del_ann(s, "chat-isvc", "autoscaling.knative.dev/scale-down-delay",
                           "autoscaling.knative.dev/window"),
        "window 60s (default) + scale-down-delay 0s (default) keeps a GPU replica only ~60 s"),
    "image-tag-pinned": (lambda s: s.container("nvidia-ds").update(image="nvcr.io/nvidia/k8s-device-plugin"),
                         "without a pinned tag"),
    "nodegroup-gpu-taint": (lambda s: s.props("gpu-ng").update(taints=[]), "no nvidia.com/gpu taint"),
    "nodegroup-desired-size-ignored": (lambda s: s.set_options("gpu-ng", ignore_changes=()),
                                       "desiredSize is managed by Pulumi"),
    "nodegroup-capacity": (lambda s: s.props("gpu-ng")["scalingConfig"].update(minSize=9.0),
                           "minSize 9 > maxSize 7"),
    "nodegroup-fits-peak": (lambda s: s.pred("chat-isvc").update(maxReplicas=28.0),
                            "all services at maxReplicas need 32 GPUs"),
    "device-plugin-priority": (lambda s: s.pod("nvidia-ds").pop("priorityClassName"), "priorityClassName is unset"),
    "device-plugin-not-privileged": (lambda s: s.container("nvidia-ds")["securityContext"].update(privileged=True),
                                     "is privileged"),
    "model-cache-pvc-protected": (lambda s: s.set_options("model-cache-pvc", protect=False), "not protected"),
    "model-revision-pinned": (lambda s: s.model("chat-isvc").update(
                                  storageUri="hf://meta-llama/Meta-Llama-3-8B-Instruct"),
                              "hf://meta-llama/Meta-Llama-3-8B-Instruct names no revision"),
    "model-cache-readiness": (lambda s: s.container("model-cache-prefetch").pop("readinessProbe"),
                              "no readinessProbe, so the cache looks ready"),
    "k8s-resources": (lambda s: s.container("model-cache-prefetch")["resources"].pop("limits"),
                      "has no limits.cpu, limits.memory"),
    "k8s-no-privilege-escalation": (
        lambda s: s.container("model-cache-prefetch")["securityContext"].update(allowPrivilegeEscalation=True),
        "does not set securityContext.allowPrivilegeEscalation: false"),
    "k8s-no-host-network": (lambda s: s.pod("model-cache-prefetch").update(hostNetwork=True),
                            "sets hostNetwork: true"),
    "k8s-recommended-labels": (lambda s: s.props("serving-namespace")["metadata"].pop("labels"),
                               "missing the recommended labels app.kubernetes.io/name"),
}


def broken(rule_id: str, stack: str = "prod") -> list[Resource]:
    s = Stack(shipped(stack))
    BAD[rule_id][0](s)
    return s.resources


def bad_stack() -> list[Resource]:
    """The prod stack with every BAD mutation applied at once: one deliberately bad stack that breaks every rule."""
    s = Stack(shipped("prod"))
    for mutate, _ in BAD.values():
        mutate(s)
    return s.resources


def write_stack(folder: Path, name: str, edit: Optional[Callable[[dict], None]] = None,
                source: str = "staging") -> Path:
    """`folder/Pulumi.<name>.yaml`: a copy of the `source` stack file, its `config:` mapping passed through `edit`
    (a team's own stack in a folder of its own, for `--stack-dir`)."""
    doc = yaml.safe_load((FIXTURES / f"Pulumi.{source}.yaml").read_text())
    if edit is not None:
        edit(doc["config"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def flapping(config: dict) -> None:
    """The first service's pods go after 6 s without load: a mandatory isvc-scale-down-stabilization violation
    the loader accepts."""
    ann = config["kserve-preflight:services"][0]["annotations"]
    ann.pop("autoscaling.knative.dev/scale-down-delay", None)
    ann["autoscaling.knative.dev/window"] = "6s"

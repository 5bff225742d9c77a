"""The stack's rendered objects through the cluster's admission rules (validation/admission.py), as the cluster
the stack targets is configured: Knative's upstream feature defaults plus the flags the stack enables itself, and
the KServe release `kserve.version` names."""

from __future__ import annotations

from manifests import knative_features, render_stack, service_manifests
from manifests.kserve_config import kserve_config_problems
from manifests.model_cache import capacity_problems
from stackconfig.load import stack_file
from stackconfig.schema import StackConfig
from manifests.node_disk import root_disk_problems
from manifests.node_fit import node_fit_problems
from validation.admission import admission_refusals
from validation.cluster_admission import KNATIVE_FEATURE_DEFAULTS, ClusterAdmission, Refusal
from validation.errors import InputError, Problem


def cluster_admission(cfg: StackConfig) -> ClusterAdmission:
    """Knative at its shipped defaults, with what the user says the cluster sets (`knative.features`) and the
    features the stack patches into config-features enabled."""
    patch = knative_features(cfg)
    cluster = ClusterAdmission({**KNATIVE_FEATURE_DEFAULTS, **cfg.knative.features},
                               cfg.knative.allow_zero_initial_scale, cfg.kserve.version, cfg.knative.version)
    return cluster.with_features(patch["data"] if patch else [])


def admission_problems(cfg: StackConfig) -> list[Refusal]:
    return admission_refusals(render_stack(cfg), cluster_admission(cfg))


def admission_failure(cfg: StackConfig) -> str | None:
    """The message `pulumi up` fails with when a webhook would refuse an object, else None."""
    refusals = admission_problems(cfg)
    if not refusals:
        return None
    return ("admission: the cluster's webhooks would refuse this stack:\n"
            + "\n".join(f"  - {r}" for r in refusals))


def check_pods_can_run(cfg: StackConfig) -> None:
    """Raise InputError (key paths under the project namespace) when a pod cannot fit its nodes (requests, or
    downloaded weights on the root volume: `node_disk`), the cached models do not fit the cache's PVC
    (`model_cache.capacity_problems`), or a KServe config the user manages would copy the stack-only annotations
    onto the pods (manifests/kserve_config.py). A `runtime.args` flag the stack renders too is the loader's
    (stackconfig/server_args.py `check_rendered_flags`)."""
    problems = (node_fit_problems(cfg) + root_disk_problems(cfg) + capacity_problems(cfg)
                + kserve_config_problems(cfg, service_manifests(cfg)))
    if problems:
        raise InputError([Problem(f"{cfg.project}:{p.path}", p.value, p.allowed) for p in problems],
                         cfg.source or stack_file(cfg.stack))  # the file the loader read (stacks/ or --stack-dir)

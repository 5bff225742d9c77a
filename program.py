"""The Pulumi program: typed config → GPU node group, device plugin, model cache and tuned InferenceServices.

`__main__.py` only calls `main()`; tests call it under `pulumi.runtime` mocks. A config mistake, or a service
that the simulation predicts will miss its SLO (the gate, `gate/__init__.py`), raises `pulumi.RunError` (one
`error:` line, no traceback) before any resource is registered.

The providers (pulumi-aws, pulumi-kubernetes: ~0.4 s to import) and the components are imported only by the
code that registers resources, and while the gate's simulations run on worker processes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pulumi

from manifests import knative_autoscaler, knative_features
from manifests.kserve_config import inferenceservice_config_patch
from manifests.admission import admission_failure, check_pods_can_run
from manifests.common import namespace
from manifests.model_download import model_download_account
from validation.cli import unexpected_error_line
from validation.errors import InputError, Problem
from gate import gate_failure, gate_warnings, start_check
from gate.startup import check_servers_start
from gate.outputs import predictions
from gate.rollout_capacity import capacity_failure, capacity_problems, expected_loads
from gate.verdict import format_estimate
from stackconfig.load import load_from_pulumi
from stackconfig.schema import StackConfig


class ConfigRefusal(pulumi.RunError):
    """The program refusing the stack config: one `error:` line under the CLI, and `problems` (key path, value, what
    is allowed) for the offline tools that run the program (`preflight check`, `policy.report`), which report them
    as they are."""

    def __init__(self, message: str, problems: list[Problem]) -> None:
        super().__init__(message)
        self.problems = list(problems)


def refused(err: InputError) -> ConfigRefusal:
    return ConfigRefusal(f"invalid stack config: {err}", err.problems)


def kubeconfig(cluster: str, endpoint: str, ca_data: str, region: str | None, profile: str | None = None) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (what `aws eks update-kubeconfig` writes), as the
    stack's `aws:profile` when set: the identity the AWS provider uses, not whatever the shell's default is (an
    explicit `--profile`, as pulumi-eks's generateKubeconfig passes it, which ambient AWS_* credentials cannot
    override)."""
    args = ["eks", "get-token", "--cluster-name", cluster] + (["--region", region] if region else []) + (
        ["--profile", profile] if profile else [])
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "users": [{"name": cluster, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": args}}}],
    })


def import_components() -> None:
    """The providers and the components (what `deploy` uses): imported while the gate simulates."""
    import components  # noqa: F401  (pulumi-aws, pulumi-kubernetes)
    import components.knative_features  # noqa: F401
    import components.kserve_config  # noqa: F401


def kubernetes_provider(cfg: StackConfig) -> Any:
    """A provider (`pulumi_kubernetes.Provider`) for the existing EKS cluster named in the config."""
    import pulumi_aws as aws
    import pulumi_kubernetes as k8s

    cluster = aws.eks.get_cluster_output(name=cfg.cluster.name)
    aws_config = pulumi.Config("aws")
    region, profile = aws_config.get("region"), aws_config.get("profile")
    ca_data = cluster.certificate_authorities.apply(lambda cas: cas[0].data)
    config = pulumi.Output.all(cluster.endpoint, ca_data).apply(
        lambda v: kubeconfig(cfg.cluster.name, v[0], v[1], region, profile))
    return k8s.Provider("eks", kubeconfig=config, enable_server_side_apply=True)


def load_config() -> StackConfig:
    try:
        return load_from_pulumi()
    except InputError as err:
        raise refused(err) from None


def check_rollouts(cfg: StackConfig, verdicts: list) -> None:
    """The static rollout-capacity check at the gate's estimate of each service's load
    (gate/rollout_capacity.py `capacity_problems`)."""
    failure = capacity_failure(cfg, verdicts)
    if not failure:
        for name, basis in expected_loads(cfg, verdicts)[1].items():
            pulumi.log.info(f"rollout capacity: fits; expected load of {name}: {basis}")
    if failure and cfg.gate.enforce:
        raise ConfigRefusal(failure, [Problem(f"{cfg.project}:{p.path}", p.value, p.allowed)
                                      for p in capacity_problems(cfg, verdicts)])
    if failure:
        pulumi.log.warn(failure + "\n(gate.enforce is false: deploying anyway)")


def run_gate(cfg: StackConfig) -> list:
    """Simulate every service as configured; fail before any resource is registered if one misses its SLO.

    The providers are imported here while the worker processes simulate (forked first, from this quiet thread).
    Returns the verdicts (empty when the gate is off), for the `predictions` stack output.
    """
    if not cfg.gate.enabled:
        return []
    from simulation.executors import LocalExecutor
    from simulation.replicate import SimulatorMismatch

    executor = LocalExecutor()
    try:
        wait = start_check(cfg, executor=executor)
        import_components()
        verdicts = wait()
    except SimulatorMismatch as err:   # not the config's fault: workers on another simulator version
        raise pulumi.RunError(f"SLO gate: {err}") from None
    except InputError as err:
        raise refused(err) from None
    finally:
        executor.close()
    for verdict in verdicts:
        pulumi.log.info(f"SLO gate: {verdict.label} ({verdict.replications} replications): " + ", ".join(
            f"{c.name} {c.status} {format_estimate(c.estimate)} (SLO {c.limit:g})" for c in verdict.checks))
    for warning in gate_warnings(verdicts):
        pulumi.log.warn(f"SLO gate: {warning}")
    failure = gate_failure(verdicts, cfg.stack)
    if failure and cfg.gate.enforce:
        raise pulumi.RunError(failure)
    if failure:
        pulumi.log.warn(failure + "\n(gate.enforce is false: deploying anyway)")
    return verdicts


def check_cluster_admits(cfg: StackConfig) -> None:
    """Pods that fit no node, and what the webhooks would refuse, before any resource is registered."""
    try:
        check_pods_can_run(cfg)
        check_servers_start(cfg)
    except InputError as err:
        raise refused(err) from None
    failure = admission_failure(cfg)
    if failure:
        raise pulumi.RunError(failure)


def main() -> None:
    """Config, gate, resources. Any exception that is not a user's mistake becomes one `error:` line with a hint
    to report it (`pulumi.RunError` prints no traceback); KSERVE_PREFLIGHT_DEBUG=1 lets it through."""
    try:
        cfg = load_config()
        check_cluster_admits(cfg)
        verdicts = run_gate(cfg)
        check_rollouts(cfg, verdicts)
        deploy(cfg, verdicts)
    except pulumi.RunError:
        raise
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("KSERVE_PREFLIGHT_DEBUG"):
            raise
        raise pulumi.RunError(unexpected_error_line(exc)) from None


def deploy(cfg: StackConfig, verdicts: list) -> None:
    """Register every resource of a checked config (after the gate)."""
    from components import (GpuNodeGroup, GpuNodeGroupArgs, ModelCache, ModelCacheArgs, NvidiaDevicePlugin,
                            NvidiaDevicePluginArgs, TunedInferenceService, TunedInferenceServiceArgs)
    from components.knative_features import KnativeAutoscaler, KnativeFeatures
    from components.kserve_config import KServeConfig
    from components.kubernetes_object import kubernetes_object

    node_group = GpuNodeGroup("gpu", GpuNodeGroupArgs.from_config(cfg))
    provider = kubernetes_provider(cfg)
    on_cluster = pulumi.ResourceOptions(provider=provider)
    # Retained on delete: deleting a Namespace deletes everything in it (the namespace controller), so a `pulumi
    # destroy` or a new cluster.namespace (a replacement: metadata.name is immutable) would take the model-cache
    # claim the ModelCache component retains, and its weights with it. The old namespace stays in the cluster.
    ns = kubernetes_object("serving-namespace", namespace(cfg.cluster.namespace),
                           pulumi.ResourceOptions(provider=provider, retain_on_delete=True))
    in_namespace = pulumi.ResourceOptions(provider=provider, depends_on=[ns])
    if cfg.deploys_device_plugin:
        NvidiaDevicePlugin("nvidia", NvidiaDevicePluginArgs.from_config(cfg), on_cluster)
    before_services: list[pulumi.Resource] = [ns]
    account = model_download_account(cfg)
    if account:  # KServe reads the model's credential through it when it creates each predictor pod
        before_services.append(kubernetes_object("model-download-sa", account, in_namespace))
    if cfg.model_cache.enabled:  # services start once every model is in the cache (the DaemonSet is Ready)
        before_services.append(ModelCache("model-cache", ModelCacheArgs.from_config(cfg), in_namespace).prefetch)
    features = knative_features(cfg)
    if features:
        before_services.append(KnativeFeatures("knative-features", features, on_cluster).patch)
    autoscaler = knative_autoscaler(cfg)
    if autoscaler:  # the revisions start under the settings the gate simulated
        before_services.append(KnativeAutoscaler("knative-autoscaler", autoscaler, on_cluster).patch)
    kserve = inferenceservice_config_patch(cfg)
    if kserve:  # before the services: KServe reads the list when it first reconciles them
        before_services.append(KServeConfig("kserve-config", kserve, on_cluster).patch)
    for_services = pulumi.ResourceOptions(provider=provider, depends_on=before_services)
    services = [TunedInferenceService(svc.name, TunedInferenceServiceArgs.from_config(cfg, svc), for_services)
                for svc in cfg.services]
    pulumi.export("gpuNodeGroup", node_group.node_group_name)
    pulumi.export("namespace", cfg.cluster.namespace)
    pulumi.export("inferenceServices", [s.inference_service.metadata["name"] for s in services])
    if verdicts:
        pulumi.export("predictions", predictions(cfg, verdicts))

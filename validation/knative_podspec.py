"""Knative Serving's pod-spec rules, checked offline on a Knative-mode predictor's rendered pod spec.

KServe copies a Knative-mode predictor's pod spec into the Knative Service (kserve
`reconcilers/knative/ksvc_reconciler.go`), so Knative's webhook rules apply to it (kserve/kserve#2554):
- `pkg/apis/serving/fieldmask.go: PodSpecMask`: pod fields behind `config-features` flags, off by default
  (affinity, nodeSelector, tolerations, topology spread, priorityClassName, …); `automountServiceAccountToken`
  only `false`; restartPolicy, nodeName, terminationGracePeriodSeconds … never.
- `pkg/apis/serving/k8s_validation.go: validateInitContainers` ("pod spec support for init-containers is off"),
  `validatePersistentVolumeClaims` ("Persistent volume claim support is disabled", "… write support is
  disabled"), `validateVolume` (emptyDir, hostPath, csi, ephemeral, image volumes behind their flags),
  `validateEnvValueFrom` (fieldRef behind `kubernetes.podspec-fieldref`), `validateEnvVar` (`reservedEnvVars`:
  PORT, K_SERVICE, K_CONFIGURATION, K_REVISION are the revision's own).
- `fieldmask.go: PodSecurityContextMask` (pod-level securityContext behind `kubernetes.podspec-securitycontext`;
  only a RuntimeDefault or Unconfined seccompProfile with `secure-pod-defaults` Enabled or, from Knative 1.20,
  AllowRootBounded), `SecurityContextMask` (no privileged, seLinuxOptions, procMount), `CapabilitiesMask`
  (capabilities.add behind `kubernetes.containerspec-addcapabilities`; just NET_BIND_SERVICE with
  `secure-pod-defaults` Enabled or AllowRootBounded), `ContainerMask` (no lifecycle, stdin, tty …).
  `VolumeSourceMask` has no ephemeral volumes before Knative 1.23 (`ClusterAdmission.knative_version`).
Called by validation/admission.py `admission_refusals`; the cluster's settings are `ClusterAdmission`'s.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from validation.cluster_admission import KNATIVE_FEATURE_SINCE, ClusterAdmission, Refusal, release


# PodSpecMask: pod-spec field → the flag that admits it.
POD_FEATURES = {
    "affinity": "kubernetes.podspec-affinity",
    "topologySpreadConstraints": "kubernetes.podspec-topologyspreadconstraints",
    "hostAliases": "kubernetes.podspec-hostaliases",
    "nodeSelector": "kubernetes.podspec-nodeselector",
    "runtimeClassName": "kubernetes.podspec-runtimeclassname",
    "tolerations": "kubernetes.podspec-tolerations",
    "shareProcessNamespace": "kubernetes.podspec-shareprocessnamespace",
    "priorityClassName": "kubernetes.podspec-priorityclassname",
    "schedulerName": "kubernetes.podspec-schedulername",
    "initContainers": "kubernetes.podspec-init-containers",
    "dnsPolicy": "kubernetes.podspec-dnspolicy",
    "dnsConfig": "kubernetes.podspec-dnsconfig",
    "hostIPC": "kubernetes.podspec-hostipc",
    "hostPID": "kubernetes.podspec-hostpid",
    "hostNetwork": "kubernetes.podspec-hostnetwork",
}
POD_NEVER = ("restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds", "nodeName", "hostname",
             "subdomain", "readinessGates", "ephemeralContainers", "overhead", "preemptionPolicy", "os")
# validateVolume / VolumeSourceMask: volume source → flag (secret, configMap, projected are always admitted).
VOLUME_FEATURES = {"emptyDir": "kubernetes.podspec-volumes-emptydir",
                   "persistentVolumeClaim": "kubernetes.podspec-persistent-volume-claim",
                   "hostPath": "kubernetes.podspec-volumes-hostpath", "csi": "kubernetes.podspec-volumes-csi",
                   "ephemeral": "kubernetes.podspec-volumes-ephemeral", "image": "kubernetes.podspec-volumes-image"}
VOLUME_ALWAYS = ("name", "secret", "configMap", "projected")
# PodSecurityContextMask: the seccompProfile types secure-pod-defaults lets a pod-level securityContext carry.
SECURE_DEFAULT_SECCOMP = ("RuntimeDefault", "Unconfined")
# ContainerMask's allowed fields, plus the fields of KServe's ModelSpec that KServe consumes itself.
CONTAINER_ALLOWED = {"name", "args", "command", "env", "workingDir", "envFrom", "image", "imagePullPolicy",
                     "livenessProbe", "ports", "readinessProbe", "resources", "securityContext", "startupProbe",
                     "terminationMessagePath", "terminationMessagePolicy", "volumeMounts"}
KSERVE_MODEL_FIELDS = {"modelFormat", "storageUri", "runtime", "protocolVersion", "storage"}
# knative/serving pkg/apis/serving/k8s_validation.go reservedEnvVars ("%q is a reserved environment variable").
KNATIVE_RESERVED_ENV = frozenset({"PORT", "K_SERVICE", "K_CONFIGURATION", "K_REVISION"})


def _feature_off(cluster: ClusterAdmission, flag: str) -> str:
    if not cluster.knows(flag):  # no flag to enable on this release (cluster_admission.KNATIVE_FEATURE_SINCE)
        return (f"Knative Serving {release(cluster.knative_version)} never admits it: its config-features has no "
                f"`{flag}` (that key and the field it admits come with Knative "
                f"{release(KNATIVE_FEATURE_SINCE[flag])}; knative.version says which release the cluster runs)")
    return (f"Knative refuses it: `{flag}` is {cluster.knative_features.get(flag, 'disabled')!r} in "
            f"knative-serving/config-features; enable it there (or let the stack manage it: knative.features)")


def predictor_containers(pred: Mapping) -> Iterator[tuple[str, Mapping]]:
    if isinstance(pred.get("model"), Mapping):
        yield "spec.predictor.model", pred["model"]
    for i, c in enumerate(pred.get("containers") or []):
        if isinstance(c, Mapping):
            yield f"spec.predictor.containers[{i}]", c


def knative_pod_refusals(obj: str, pred: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    """Knative's pod-spec rules on a Knative-mode predictor (see the module docstring for the sources)."""
    p = "spec.predictor"
    for key, flag in POD_FEATURES.items():
        if pred.get(key) and not cluster.admits(flag):
            rule = "k8s_validation.go validateInitContainers" if key == "initContainers" else "fieldmask.go PodSpecMask"
            yield Refusal(obj, f"{p}.{key}", rule, _feature_off(cluster, flag))
    for key in POD_NEVER:
        if key in pred:
            yield Refusal(obj, f"{p}.{key}", "fieldmask.go PodSpecMask", "Knative never admits this pod field")
    if pred.get("automountServiceAccountToken") is True:
        yield Refusal(obj, f"{p}.automountServiceAccountToken", "fieldmask.go PodSpecMask",
                      "Knative admits only `false` here; leave it unset for the default")
    sc = pred.get("securityContext")
    if isinstance(sc, Mapping) and sc and not cluster.admits("kubernetes.podspec-securitycontext"):
        # PodSecurityContextMask keeps only a RuntimeDefault or Unconfined seccompProfile when secure-pod-defaults
        # is Enabled or AllowRootBounded (cluster.admits)
        seccomp_only = (set(sc) == {"seccompProfile"} and cluster.admits("secure-pod-defaults")
                        and (sc.get("seccompProfile") or {}).get("type") in SECURE_DEFAULT_SECCOMP)
        if not seccomp_only:
            yield Refusal(obj, f"{p}.securityContext", "fieldmask.go PodSecurityContextMask",
                          _feature_off(cluster, "kubernetes.podspec-securitycontext")
                          + "; or set these fields in the container's securityContext, which Knative admits")
    for i, vol in enumerate(pred.get("volumes") or []):
        yield from _volume_refusals(obj, f"{p}.volumes[{i}]", vol, cluster)
    for path, c in predictor_containers(pred):
        yield from _container_refusals(obj, path, c, cluster)


def _volume_refusals(obj: str, path: str, vol: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    for key in vol:
        if key in VOLUME_ALWAYS:
            continue
        flag = VOLUME_FEATURES.get(key)
        if flag is None:
            yield Refusal(obj, f"{path}.{key}", "fieldmask.go VolumeSourceMask",
                          "Knative admits only secret, configMap, projected and flag-gated volume sources")
        elif not cluster.admits(flag):
            rule = ("k8s_validation.go validatePersistentVolumeClaims" if key == "persistentVolumeClaim"
                    else "k8s_validation.go validateVolume" if cluster.knows(flag)
                    else "fieldmask.go VolumeSourceMask")  # a source this release's mask does not have
            yield Refusal(obj, f"{path}.{key}", rule, _feature_off(cluster, flag))
        elif key == "persistentVolumeClaim" and not (vol[key] or {}).get("readOnly") \
                and not cluster.admits("kubernetes.podspec-persistent-volume-write"):
            yield Refusal(obj, f"{path}.{key}", "k8s_validation.go validatePersistentVolumeClaims",
                          "a writable PVC: " + _feature_off(cluster, "kubernetes.podspec-persistent-volume-write"))


def _container_refusals(obj: str, path: str, c: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    for key in sorted(set(c) - CONTAINER_ALLOWED - KSERVE_MODEL_FIELDS):
        yield Refusal(obj, f"{path}.{key}", "fieldmask.go ContainerMask", "Knative never admits this container field")
    for i, env in enumerate(c.get("env") or []):
        if (env or {}).get("name") in KNATIVE_RESERVED_ENV:
            yield Refusal(obj, f"{path}.env[{i}].name", "k8s_validation.go validateEnvVar",
                          f"{env['name']!r} is a reserved environment variable: Knative sets it in the revision")
        source = (env or {}).get("valueFrom") or {}
        for key in ("fieldRef", "resourceFieldRef"):
            if key in source and not cluster.admits("kubernetes.podspec-fieldref"):
                yield Refusal(obj, f"{path}.env[{i}].valueFrom.{key}", "k8s_validation.go validateEnvValueFrom",
                              _feature_off(cluster, "kubernetes.podspec-fieldref"))
    sc = c.get("securityContext") or {}
    if sc.get("privileged") is True:
        yield Refusal(obj, f"{path}.securityContext.privileged", "fieldmask.go SecurityContextMask",
                      "Knative admits only privileged: false")
    for key in ("seLinuxOptions", "procMount", "windowsOptions"):
        if key in sc:
            yield Refusal(obj, f"{path}.securityContext.{key}", "fieldmask.go SecurityContextMask",
                          "Knative never admits this securityContext field")
    add = (sc.get("capabilities") or {}).get("add")
    if add and not cluster.admits("kubernetes.containerspec-addcapabilities") and not (
            list(add) == ["NET_BIND_SERVICE"] and cluster.admits("secure-pod-defaults")):
        yield Refusal(obj, f"{path}.securityContext.capabilities.add", "fieldmask.go CapabilitiesMask",
                      _feature_off(cluster, "kubernetes.containerspec-addcapabilities"))
    for i, mount in enumerate(c.get("volumeMounts") or []):
        if (mount or {}).get("mountPropagation") and not cluster.admits("kubernetes.podspec-volumes-mount-propagation"):
            yield Refusal(obj, f"{path}.volumeMounts[{i}].mountPropagation", "k8s_validation.go validateVolumeMounts",
                          _feature_off(cluster, "kubernetes.podspec-volumes-mount-propagation"))

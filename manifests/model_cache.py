"""The model cache: a shared PVC holding model artifacts and a DaemonSet that fills it.

Each model is cached under a key of its name and a hash of its source URI (`hf://org/model:<revision>` pins a
revision), so a changed URI or revision is a new download, never the stale copy. Each prefetch pod downloads every
configured model that is not yet complete, all models in parallel (one node at a time per model, through an
atomic `mkdir` lock on the shared volume), writes a `.complete` marker only after the download finished, and
turns Ready only when every marker is there. The DaemonSet runs on every Linux node (GPU nodes included), so the
cache fills while the GPU node group is still at zero. InferenceServices then read `pvc://<pvc>/<key>`,
which KServe mounts instead of running its storage initializer (kserve `pkg/webhook/admission/pod/
storage_initializer_injector.go`: PVC URIs are mounted, not downloaded), so a warm cache skips the download.
KServe adds that mount in its pod webhook, after Knative validated the service, so no pod-spec PVC feature flag
is needed. Nothing holds a model pod in an init container (Knative refuses init containers by default): Pulumi
creates the InferenceServices only after the prefetch DaemonSet is Ready, i.e. after every model is complete on a
node (`PREFETCH_WAIT_FOR`: a DaemonSet with no pod scheduled is not Ready, so a cluster where no node can run the
prefetch fails `pulumi up` at the fill timeout instead of starting services on an empty cache).
"""

from __future__ import annotations

import hashlib
import math
import shlex

from manifests.common import labels, restricted_security_context
from stackconfig.platform import cache_write_mib_s, slow_rate
from stackconfig.services import read_from_cache
from stackconfig.schema import ServiceConfig, StackConfig
from validation.errors import Problem

NAME = "model-cache-prefetch"
MOUNT = "/models"
# KServe's storage initializer image understands s3://, gs://, hf://, https:// (python/storage-initializer).
DOWNLOAD = "/storage-initializer/scripts/initializer-entrypoint"


PREFETCH_IMAGE_GIB = 2.0  # kserve/storage-initializer, compressed, rounded up
FILL_MARGIN_S = 300  # scheduling, pod start, listing the repository
# A template change (a model added or re-pinned, a new image) replaces the pods a quarter of the nodes at a time
# (Kubernetes' default, maxUnavailable 1, goes one node at a time, so a rollout grew with the node count). Nothing
# waits on a prefetch pod being available (predictors mount the PVC themselves), so a large step costs nothing.
MAX_UNAVAILABLE_PCT = 25
# With maxUnavailable p % of N nodes (rounded up: DaemonSetSpec.updateStrategy.rollingUpdate) a rollout takes
# ceil(N / ceil(N·p/100)) steps, at most ceil(100/p) whatever N: the bound for the Linux nodes the stack cannot
# count (the GPU group up to maxSize, plus the cluster's other nodes).
ROLLOUT_STEPS = math.ceil(100 / MAX_UNAVAILABLE_PCT)
# One step: the old pod stops (its TERM trap runs at once), the new one is scheduled and starts, and its first
# readiness probe (every 15 s) passes on a complete cache; the image pull is added separately.
ROLLOUT_STEP_S = 60


def cache_key(svc: ServiceConfig) -> str:
    """The model's folder in the cache: its name and the first 12 hex digits of sha256(source URI), as KServe's
    LocalModelCache keys by sha256(storageUri)."""
    return f"{svc.model.name}-{hashlib.sha256(svc.storage_uri.encode()).hexdigest()[:12]}"


def _cached(svc: ServiceConfig) -> bool:
    return read_from_cache(svc.storage_uri)


def cache_uri(cfg: StackConfig, svc: ServiceConfig) -> str:
    """Where the service reads its model: the cache when it is enabled, else the model's source URI."""
    if cfg.model_cache.enabled and _cached(svc):
        return f"pvc://{cfg.model_cache.pvc_name}/{cache_key(svc)}"
    return svc.storage_uri


def cached_models(cfg: StackConfig) -> dict[str, str]:
    """cache key → source URI for every service whose model goes through the cache (sorted, deduplicated)."""
    return dict(sorted({cache_key(s): s.storage_uri for s in cfg.services if _cached(s)}.items()))


def capacity_problems(cfg: StackConfig) -> list[Problem]:
    """Every cached model must fit the PVC (`modelCache.sizeGib`) at once: the prefetch DaemonSet downloads each
    one in full, and a download past the volume's capacity fails with ENOSPC and retries forever, so the
    DaemonSet never turns Ready and Pulumi times out before any InferenceService. FSx for Lustre enforces the
    size (its capacity is the claim's storage request, aws-fsx-csi-driver); EFS is elastic and ignores it, where
    the check costs nothing. Copies of earlier revisions stay on the volume (nothing prunes them: an old
    revision's pods may still read them during a rollout), so the real need grows with every re-pin. Each model
    takes what its download writes (`catalog.Model.download_bytes`): an hf:// repository whole, so a second copy of
    the weights (meta-llama's original/*.pth, Mistral's consolidated.safetensors) is on the volume too."""
    if not cfg.model_cache.enabled:
        return []
    held = {cache_key(s): s for s in cfg.services if _cached(s)}
    need = sum(s.model.download_gib(s.storage_uri) for s in held.values())
    if need <= cfg.model_cache.size_gib:
        return []
    models = ", ".join(_held(s) for s in held.values())
    whole = any(s.model.download_gib(s.storage_uri) > s.model.weights_gib for s in held.values())
    return [Problem("modelCache.sizeGib", cfg.model_cache.size_gib, (
        f"expected at least {math.ceil(need)} GiB: the cache holds every cached model at once ({models}); a "
        "download past the volume's capacity fails (no space left on device), the prefetch DaemonSet never turns "
        "Ready and no InferenceService is created. Raise modelCache.sizeGib (leave room for earlier revisions: "
        "they are not pruned)" + (HF_WHOLE_REPO if whole else "")))]


# Why an hf:// model takes more than its weights, and the ways out (catalog.Model.download_bytes).
HF_WHOLE_REPO = ("; an hf:// source is its whole repository, a second copy of the weights included (KServe's storage "
                 "initializer downloads every file of it): serve a copy of just the safetensors from s3:// to store "
                 "the weights alone, or set catalog.models.<name>.repoGib to what the repository you name holds")


def _held(svc: ServiceConfig) -> str:
    """`name N GiB` of one cached model; an hf:// repository that holds more than the weights says so."""
    gib, weights = svc.model.download_gib(svc.storage_uri), svc.model.weights_gib
    if gib > weights:
        return f"{svc.model.name} {gib:.1f} GiB: whole hf:// repository, {weights:.1f} GiB of weights"
    return f"{svc.model.name} {gib:.1f} GiB"


def fill_timeout_s(cfg: StackConfig) -> int:
    """How long Pulumi waits for the prefetch DaemonSet: until the whole rollout is done and at least one pod is
    Ready (`PREFETCH_WAIT_FOR`: kstatus Current, every scheduled pod updated and Ready, plus one pod at least),
    10 minutes by default. Twice the expected pull of the prefetch image and download of every cached model (what
    each download writes, an hf:// repository whole: `catalog.Model.download_bytes`) at the
    `coldStart.downloadGBps` prior at its slow end (`stackconfig.platform.slow_rate`; capped by the cache storage's
    per-client throughput and by the file system's write throughput, which the parallel downloads share:
    `stackconfig.platform.cache_write_mib_s`, 100 MiB/s for an EFS file system bursting; one node downloads each
    model, the others wait for its marker), plus each rollout step's pull and start (`ROLLOUT_STEPS`, bounded whatever
    the node count), plus a margin."""
    cold, mc = cfg.cold_start, cfg.model_cache
    downloads = sum({cache_key(s): s.model.download_bytes(s.storage_uri) for s in cfg.services if _cached(s)}.values())
    rate = min(slow_rate(cold.download_gbps) * 1e9, mc.throughput_mib_s * 2**20, cache_write_mib_s(mc) * 2**20)
    pull = PREFETCH_IMAGE_GIB * 2**30 / (slow_rate(cold.image_pull_mbps) * 1e6)
    return math.ceil(2 * (pull + downloads / rate) + ROLLOUT_STEPS * (pull + ROLLOUT_STEP_S) + FILL_MARGIN_S)


def model_cache_pvc(cfg: StackConfig) -> dict:
    mc = cfg.model_cache
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": mc.pvc_name, "namespace": mc.namespace, "labels": labels(mc.pvc_name, "model-cache")},
        "spec": {"accessModes": [mc.access_mode], "storageClassName": mc.storage_class,
                 "resources": {"requests": {"storage": f"{mc.size_gib}Gi"}}},
    }


LOCK_STALE_MIN = 10  # a lock not refreshed for this long belongs to a pod that died mid-download
RETRY_S = 60  # back-off after a failed download (bad URI, missing credentials, throttling)

# POSIX sh (the image's /bin/sh is dash). `fetch URI DEST` returns once DEST/.complete exists. The lock holder
# refreshes the lock's mtime every 5 s while the download runs, so other nodes break only locks whose holder is
# gone. Every pause is `nap`: a background `sleep` the shell `wait`s for, because a trapped signal interrupts
# `wait` at once (POSIX "wait": it returns > 128 and the trap runs) but not a foreground `sleep`; so SIGTERM (pod
# deletion, node drain, a rollout) releases a held lock and ends the pod within moments, not after the grace.
_FETCH = f"""set -u
nap() {{ sleep "$1" & napping=$!; wait "$napping"; napping=""; }}
fetch() {{
  held="" napping=""
  trap 'kill $napping 2>/dev/null; if [ -n "$held" ]; then rmdir "$held" 2>/dev/null; fi; exit 143' TERM INT
  until [ -f "$2/.complete" ]; do
    if err=$(mkdir "$2.lock" 2>&1); then
      held="$2.lock"
      rm -rf "$2.partial"
      {DOWNLOAD} "$1" "$2.partial" &
      pid=$!
      while kill -0 "$pid" 2>/dev/null; do touch -c "$2.lock"; nap 5; done
      if wait "$pid"; then
        rm -rf "$2" && mv "$2.partial" "$2" && touch "$2/.complete" ||
          echo "prefetch: storing $1 in $2 failed; retrying in {RETRY_S} s" >&2
      else
        echo "prefetch: downloading $1 failed; retrying in {RETRY_S} s" >&2
      fi
      rmdir "$2.lock"
      held=""
      [ -f "$2/.complete" ] || nap {RETRY_S}
    elif [ -d "$2.lock" ]; then
      find "$2.lock" -maxdepth 0 -mmin +{LOCK_STALE_MIN} -exec rmdir {{}} \\; 2>/dev/null
      nap 15
    elif [ ! -f "$2/.complete" ]; then
      echo "prefetch: cannot create the lock $2.lock ($err); retrying in {RETRY_S} s" >&2
      nap {RETRY_S}
    fi
  done
}}"""
# The volume must be writable by the image's user (uid 1000) before anything waits on a lock: a `mkdir` of a lock
# in a directory it cannot write fails like a lock another node holds, and every pod then napped for ever, silent,
# until Pulumi's fill timeout. A root-owned share (a static EFS volume without an access point, a new FSx for
# Lustre file system) is such a directory, and the pod's fsGroup would not help: the EFS and FSx CSIDrivers leave
# fsGroupPolicy at its default, ReadWriteOnceWithFSType, under which the kubelet changes no ReadWriteMany volume's
# ownership (aws-efs-csi-driver and aws-fsx-csi-driver deploy/kubernetes/base/csidriver.yaml). So the pod exits
# non-zero (CrashLoopBackOff, the reason in its log) naming the mount, the uid and the fix. Dynamically
# provisioned EFS (`provisioningMode: efs-ap`) passes: its access point makes every request as the access point's
# POSIX user, who owns the root directory the driver creates (aws-efs-csi-driver docs/parameters.md).
_WRITABLE = f"""if ! probe=$(mktemp -d {MOUNT}/.write-probe.XXXXXX 2>&1); then
  echo "prefetch: cannot write the model cache volume mounted at {MOUNT}/ as uid $(id -u) gid $(id -g): $probe." \\
    "Make its root directory writable by this user: a StorageClass with provisioningMode efs-ap (an EFS access" \\
    "point with a POSIX user), a static EFS volume through an access point (volumeHandle fs-...::fsap-...) whose" \\
    "POSIX user owns its directory, or chown the directory to $(id -u) once. Setting fsGroup does not help: the EFS" \\
    "and FSx CSI drivers apply it to no ReadWriteMany volume" >&2
  exit 1
fi
rmdir "$probe\""""

# Once every model is complete the pod idles until it is deleted. It is PID 1 of its container, and the kernel
# delivers a signal to a namespace's init only if it installed a handler for it (pid_namespaces(7)): an `exec
# sleep` there ignored SIGTERM, so every rollout or drain waited out the full grace period before SIGKILL.
IDLE = "trap 'kill $napping 2>/dev/null; exit 0' TERM INT\nwhile :; do nap 3600; done"


def prefetch_script(models: dict[str, str]) -> str:
    """POSIX sh: exit 1 with the fix in its log unless the volume is writable (`_WRITABLE`); then fetch every
    missing model in parallel, each under a lock on the shared volume, mark it complete, and idle until SIGTERM.
    A lock that cannot be created for another reason than another node's (no space left, an I/O error) is
    logged and retried. Each fetch runs in its own subshell with its own TERM trap (a subshell does not
    inherit the parent's traps); the parent forwards TERM to them, so every held lock is released on pod deletion.

    The download is KServe's storage initializer (`initializer-entrypoint SRC DEST`, the image's ENTRYPOINT in
    kserve `python/storage-initializer.Dockerfile`; Debian slim, so dash, GNU find and coreutils are there).
    URIs and paths are shell-quoted: model names come from the stack's catalog.
    """
    lines = [_FETCH, _WRITABLE, 'pids="" napping=""']
    lines += [f"fetch {shlex.quote(uri)} {shlex.quote(f'{MOUNT}/{name}')} &\npids=\"$pids $!\""
              for name, uri in models.items()]
    lines += ["trap 'kill -TERM $pids 2>/dev/null; wait; exit 143' TERM INT",
              "wait",
              IDLE]
    return "\n".join(lines)


def readiness_command(models: dict[str, str]) -> list[str]:
    checks = " && ".join(f"test -f {shlex.quote(f'{MOUNT}/{name}/.complete')}" for name in models) or "true"
    return ["sh", "-c", checks]


# When Pulumi counts the prefetch DaemonSet Ready: at least one pod scheduled, and every scheduled pod current
# and Ready. pulumi-kubernetes' own DaemonSet await is kstatus Current (provider/pkg/await/daemonset.go), which a
# DaemonSet that schedules no pod at all meets at once (desiredNumberScheduled 0 = every count 0), so on a cluster
# where no node takes the prefetch (every other node tainted or Fargate, the GPU group at zero) the
# InferenceServices were created before a byte was cached. `pulumi.com/waitFor` (pulumi-kubernetes >= 4.18)
# replaces that await with its expressions (metadata/overrides.go ReadyCondition; await.go uses the built-in
# awaiter only without one): here kstatus's DaemonSet rule (cli-utils kstatus `daemonsetConditions`: each of
# current, updated, available and ready at least desiredNumberScheduled, the status's observedGeneration current,
# which the JSONPath condition checks itself, condition/jsonpath.go) plus desiredNumberScheduled > 0. One RFC 9535
# filter over the object's members (pulumi-kubernetes >= 4.24 parses waitFor JSONPath as RFC 9535,
# provider/pkg/jsonpath): only `status` has these fields, and a filter that selects nothing is not yet Ready. No
# `>=`: the provider splits a waitFor expression on a single '=' (jsonpath.Parse keeps only '=='), so "at least"
# is written `>` or `==`.
_COUNTS = ("currentNumberScheduled", "updatedNumberScheduled", "numberAvailable", "numberReady")
PREFETCH_WAIT_FOR = "jsonpath={$[?" + " && ".join(
    ["@.desiredNumberScheduled > 0"]
    + [f"(@.{n} > @.desiredNumberScheduled || @.{n} == @.desiredNumberScheduled)" for n in _COUNTS]) + "]}"


def model_cache_daemonset(cfg: StackConfig) -> dict:
    mc, ng = cfg.model_cache, cfg.node_group
    models = cached_models(cfg)
    meta_labels = labels(NAME, "model-cache")
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": mc.namespace, "labels": meta_labels,
                     # pulumi-kubernetes waits this long for Ready (every model downloaded) before the services,
                     # and counts it Ready only with at least one pod (PREFETCH_WAIT_FOR)
                     "annotations": {"pulumi.com/timeoutSeconds": str(fill_timeout_s(cfg)),
                                     "pulumi.com/waitFor": PREFETCH_WAIT_FOR}},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": f"{MAX_UNAVAILABLE_PCT}%"}},
            "template": {
                "metadata": {"labels": meta_labels},
                "spec": {
                    # Every Linux node, GPU nodes included: the cache fills with the GPU group at zero.
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in ng.taints],
                    # No API token: the download never calls the API, and EKS's pod identity webhook projects
                    # IRSA's web-identity token as its own volume whatever this says (amazon-eks-pod-identity-
                    # webhook pkg/handler/handler.go: the `aws-iam-token` ServiceAccountToken projection).
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 30,  # the TERM traps end the pod within moments
                    "containers": [{
                        "name": "prefetch",
                        "image": mc.prefetch_image,
                        "command": ["sh", "-c", prefetch_script(models)],
                        "securityContext": restricted_security_context(non_root=True),  # image: USER 1000
                        # Idle once the cache is full; a download is network- and storage-bound.
                        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                      "limits": {"cpu": "2", "memory": "4Gi"}},
                        "readinessProbe": {"exec": {"command": readiness_command(models)},
                                           "periodSeconds": 15, "failureThreshold": 1},
                        "volumeMounts": [{"name": "cache", "mountPath": MOUNT}],
                        # e.g. HF_TOKEN for gated hf:// models (kserve/storage: HF_TOKEN, AWS_*, GOOGLE_*)
                        **({"envFrom": [{"secretRef": {"name": mc.credentials_secret}}]}
                           if mc.credentials_secret else {}),
                    }],
                    # s3:// with IRSA: the pod identity webhook injects AWS_ROLE_ARN and
                    # AWS_WEB_IDENTITY_TOKEN_FILE for this account; boto3 prefers env keys from the Secret
                    **({"serviceAccountName": mc.service_account} if mc.service_account else {}),
                    # The image is pulled on every Linux node: a registry mirror's (or Docker Hub's) credentials
                    **({"imagePullSecrets": [{"name": name} for name in mc.image_pull_secrets]}
                       if mc.image_pull_secrets else {}),
                    "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": mc.pvc_name}}],
                },
            },
        },
    }

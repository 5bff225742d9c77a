"""The model cache: a shared PVC holding model artifacts and a DaemonSet that fills it from the GPU nodes.

Each prefetch pod downloads every configured model that is not yet complete (one node at a time per model,
through an atomic `mkdir` lock on the shared volume), writes a `.complete` marker only after the download
finished, and turns Ready only when every marker is there. InferenceServices then read `pvc://<pvc>/<model>`,
which KServe mounts instead of running its storage initializer (kserve `pkg/webhook/admission/pod/
storage_initializer_injector.go`: PVC URIs are mounted, not downloaded), so a warm cache skips the download.
KServe adds that mount in its pod webhook, after Knative validated the service, so no pod-spec PVC feature flag
is needed. Nothing holds a model pod in an init container (Knative refuses init containers by default): Pulumi
creates the InferenceServices only after the prefetch DaemonSet is Ready, i.e. after every model is complete.
"""

from __future__ import annotations

import shlex

from manifests.common import labels, restricted_security_context
from stackconfig.schema import GPU_LABEL, ServiceConfig, StackConfig

NAME = "model-cache-prefetch"
MOUNT = "/models"
# KServe's storage initializer image understands s3://, gs://, hf://, https:// (python/storage-initializer).
DOWNLOAD = "/storage-initializer/scripts/initializer-entrypoint"


def cache_uri(cfg: StackConfig, svc: ServiceConfig) -> str:
    """Where the service reads its model: the cache when it is enabled, else the model's source URI."""
    if cfg.model_cache.enabled and not svc.storage_uri.startswith("pvc://"):
        return f"pvc://{cfg.model_cache.pvc_name}/{svc.model.name}"
    return svc.storage_uri


def cached_models(cfg: StackConfig) -> dict[str, str]:
    """model name → source URI for every service whose model goes through the cache (sorted, deduplicated)."""
    return dict(sorted({s.model.name: s.storage_uri for s in cfg.services
                        if not s.storage_uri.startswith("pvc://")}.items()))


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
# gone; SIGTERM (pod deletion, node drain) releases a held lock at once.
_FETCH = f"""set -u
held=""
trap 'if [ -n "$held" ]; then rmdir "$held" 2>/dev/null; fi; exit 143' TERM INT
fetch() {{
  until [ -f "$2/.complete" ]; do
    if mkdir "$2.lock" 2>/dev/null; then
      held="$2.lock"
      rm -rf "$2.partial"
      {DOWNLOAD} "$1" "$2.partial" &
      pid=$!
      while kill -0 "$pid" 2>/dev/null; do touch -c "$2.lock"; sleep 5; done
      if wait "$pid"; then
        rm -rf "$2" && mv "$2.partial" "$2" && touch "$2/.complete"
      else
        echo "prefetch: downloading $1 failed; retrying in {RETRY_S} s" >&2
      fi
      rmdir "$2.lock"
      held=""
      [ -f "$2/.complete" ] || sleep {RETRY_S}
    else
      find "$2.lock" -maxdepth 0 -mmin +{LOCK_STALE_MIN} -exec rmdir {{}} \\; 2>/dev/null
      sleep 15
    fi
  done
}}"""


def prefetch_script(models: dict[str, str]) -> str:
    """POSIX sh: fetch each missing model under a lock on the shared volume, mark it complete, then idle.

    The download is KServe's storage initializer (`initializer-entrypoint SRC DEST`, the image's ENTRYPOINT in
    kserve `python/storage-initializer.Dockerfile`; Debian slim, so dash, GNU find and coreutils are there).
    URIs and paths are shell-quoted: model names come from the stack's catalog.
    """
    lines = [_FETCH]
    lines += [f"fetch {shlex.quote(uri)} {shlex.quote(f'{MOUNT}/{name}')}" for name, uri in models.items()]
    lines.append("exec sleep 2147483647")
    return "\n".join(lines)


def readiness_command(models: dict[str, str]) -> list[str]:
    checks = " && ".join(f"test -f {shlex.quote(f'{MOUNT}/{name}/.complete')}" for name in models) or "true"
    return ["sh", "-c", checks]


def model_cache_daemonset(cfg: StackConfig) -> dict:
    mc, ng = cfg.model_cache, cfg.node_group
    models = cached_models(cfg)
    meta_labels = labels(NAME, "model-cache")
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": mc.namespace, "labels": meta_labels},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": {
                "metadata": {"labels": meta_labels},
                "spec": {
                    "nodeSelector": dict(GPU_LABEL),
                    "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in ng.taints],
                    "terminationGracePeriodSeconds": 30,  # the TERM trap runs after the current `sleep 5`
                    "containers": [{
                        "name": "prefetch",
                        "image": mc.prefetch_image,
                        "command": ["sh", "-c", prefetch_script(models)],
                        "securityContext": restricted_security_context(),
                        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                      "limits": {"cpu": "2", "memory": "4Gi"}},
                        "readinessProbe": {"exec": {"command": readiness_command(models)},
                                           "periodSeconds": 15, "failureThreshold": 1},
                        "volumeMounts": [{"name": "cache", "mountPath": MOUNT}],
                        # e.g. HF_TOKEN for gated hf:// models (kserve/storage: HF_TOKEN, AWS_*, GOOGLE_*)
                        **({"envFrom": [{"secretRef": {"name": mc.credentials_secret}}]}
                           if mc.credentials_secret else {}),
                    }],
                    # s3:// with IRSA: the pod identity webhook injects AWS_ROLE_ARN / token for this account
                    **({"serviceAccountName": mc.service_account} if mc.service_account else {}),
                    "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": mc.pvc_name}}],
                },
            },
        },
    }

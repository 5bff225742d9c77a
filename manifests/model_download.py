"""The service account KServe's storage initializer downloads a model with when the model cache does not serve it.

For a `storageUri` it must download (not `pvc://`, which it mounts, nor an `oci://` modelcar), KServe's pod webhook
injects the storage-initializer init container and gives it the credentials it finds through the pod's
`serviceAccountName`, "default" when unset (kserve `pkg/webhook/admission/pod/storage_initializer_injector.go` →
`pkg/credentials/service_account_credentials.go: CreateSecretVolumeAndEnv`). `mountSecretCredential` reads each
Secret the account lists under `secrets` by its keys, the first kind that matches: AWS_SECRET_ACCESS_KEY (the key
names of the default `inferenceservice-config` `credentials.s3`) → AWS_* variables, … HF_TOKEN → HF_TOKEN
(`hf/hf_secret.go: BuildSecretEnvs`); so one Secret carries one kind of credential. An `eks.amazonaws.com/role-arn`
annotation adds the account's `serving.kserve.io/s3-*` settings (`s3/s3_service_account.go`); EKS's pod identity
webhook then mounts the web-identity token itself, into init containers too and whatever
`automountServiceAccountToken` says (aws/amazon-eks-pod-identity-webhook `pkg/handler/handler.go:
getPodSpecPatch`). Knative admits `serviceAccountName` without a feature flag (knative/serving
`pkg/apis/serving/fieldmask.go: PodSpecMask`). A missing account means no credential at all (KServe logs and
injects nothing), so the InferenceServices are created after the stack's account.
"""

from __future__ import annotations

from manifests.common import labels
from manifests.model_cache import cache_uri
from stackconfig.schema import ServiceConfig, StackConfig

ACCOUNT = "model-download"  # the stack's account, listing modelCache.credentialsSecret


def downloads_in_pod(cfg: StackConfig, svc: ServiceConfig) -> bool:
    """KServe's storage initializer downloads this service's model in the predictor pod."""
    return cache_uri(cfg, svc).split("://", 1)[0] not in ("pvc", "oci")


def predictor_account(cfg: StackConfig, svc: ServiceConfig) -> str | None:
    """The predictor's `serviceAccountName`: the user's `modelCache.serviceAccountName`, else the stack's account
    when `credentialsSecret` is set; None when the model needs no download in the pod or no credential is set."""
    mc = cfg.model_cache
    if not downloads_in_pod(cfg, svc):
        return None
    return mc.service_account or (ACCOUNT if mc.credentials_secret else None)


def model_download_account(cfg: StackConfig) -> dict | None:
    """v1 ServiceAccount listing `modelCache.credentialsSecret`, for predictors that download in the pod (None when
    none does or the user names their own account). No API token: the storage initializer never calls the API."""
    mc = cfg.model_cache
    if mc.service_account or not mc.credentials_secret or not any(downloads_in_pod(cfg, s) for s in cfg.services):
        return None
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": cfg.cluster.namespace,
                         "labels": labels(ACCOUNT, "model-download")},
            "automountServiceAccountToken": False,
            "secrets": [{"name": mc.credentials_secret}]}

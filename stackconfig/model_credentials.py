"""The credential a model's download needs, checked at load.

One credential, two downloaders, both KServe's storage initializer. With the model cache on, the prefetch DaemonSet
runs it with `modelCache.credentialsSecret` as its environment and `modelCache.serviceAccountName` as its pod's
account (manifests/model_cache.py). With the cache off, KServe's pod webhook injects it as an init container into
every predictor pod and reads credentials only through the pod's service account (kserve
`pkg/credentials/service_account_credentials.go`: `CreateSecretVolumeAndEnv` →
`CreateSecretVolumeAndEnvFromServiceAccount`: the account's `eks.amazonaws.com/role-arn` annotation, then each
Secret its `secrets` lists; manifests/model_download.py renders that account). The initializer downloads `hf://`
with huggingface_hub (HF_TOKEN; gated repositories answer 401 without it) and `s3://` with boto3 (AWS_* keys or
IRSA's web identity; the node role the stack creates reads no S3) (`python/kserve/kserve/storage/storage.py`:
`_download_hf`, `_download_s3`). `gs://` falls back to an anonymous client and is not checked here.
For `s3://` the stack does not count on the last link of boto3's default chain (environment keys, then IRSA's web
identity, …, then the node's instance role from instance metadata): the node role it creates reads no S3
(manifests/node_group.py NODE_POLICIES), an existing `cluster.nodeRoleArn`'s policies cannot be read offline, and
the prefetch DaemonSet runs on every Linux node, not only that group. So an `s3://` model needs
`modelCache.serviceAccountName` (IRSA, the EKS way), unless `modelCache.s3Credentials: secret` states that
`credentialsSecret` holds AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: offline nobody reads a Secret's keys, so the
user says which of the two carries S3 credentials, cache on or off (`check_s3_credentials`).
Without the cache, KServe takes one kind of credential from each Secret, so one `credentialsSecret` cannot serve
gated `hf://` and `s3://` sources together (`check_one_secret_kind`).
"""

from __future__ import annotations

from stackconfig.types import ModelCacheConfig, ServiceConfig
from validation.errors import Problem
from validation.fields import Section

S3_CREDENTIALS = ("serviceAccount", "secret")  # modelCache.s3Credentials: which key carries S3 credentials

_POD_ACCOUNT = ("with modelCache.enabled false, KServe's storage initializer downloads it in each predictor pod and "
                "reads credentials only from the pod's service account")
_PREFETCH = ("with modelCache.enabled true, the prefetch DaemonSet downloads it with boto3 on every Linux node, "
             "which without either falls back to that node's instance role, one the stack gives no S3 read")


def needed_credential(storage_uri: str, public: bool) -> str | None:
    """"hf" for a gated Hugging Face repository, "s3" for a bucket, None when the download needs none."""
    scheme = storage_uri.split("://", 1)[0] if "://" in storage_uri else ""
    return "hf" if scheme == "hf" and not public else "s3" if scheme == "s3" else None


def check_model_credentials(msec: Section, storage_uri: str, public: bool, cache: ModelCacheConfig) -> None:
    """A gated `hf://` model or an `s3://` model that its downloader could not read is a problem at
    `model.storageUri`, naming the keys that would give it a credential."""
    needed = needed_credential(storage_uri, public)
    has_secret, has_account = bool(cache.credentials_secret), bool(cache.service_account)
    if needed == "hf" and cache.enabled and not has_secret:
        # The prefetch would retry for ever while every pod of the service waits for the model.
        msec.problem("storageUri", storage_uri, "expected modelCache.credentialsSecret (a Secret with HF_TOKEN) "
                     "for an hf:// model, or model.public: true if the repository is not gated")
    elif needed == "hf" and not cache.enabled and not (has_secret or has_account):
        msec.problem("storageUri", storage_uri, "expected modelCache.credentialsSecret (a Secret with HF_TOKEN, "
                     "which the stack lists in its ServiceAccount for the predictor) or modelCache."
                     f"serviceAccountName (one whose `secrets` list it): {_POD_ACCOUNT}; or model.public: true if "
                     "the repository is not gated")
    elif needed == "s3" and cache.s3_credentials == "serviceAccount" and not has_account:
        secret = (f"modelCache.s3Credentials: secret if credentialsSecret {cache.credentials_secret!r} holds"
                  if has_secret else "modelCache.credentialsSecret with modelCache.s3Credentials: secret, a Secret "
                  "with")
        msec.problem("storageUri", storage_uri, "expected modelCache.serviceAccountName (an IRSA ServiceAccount "
                     "annotated eks.amazonaws.com/role-arn whose role may s3:ListBucket and s3:GetObject on the "
                     f"bucket), or {secret} AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: "
                     + (_PREFETCH if cache.enabled else _POD_ACCOUNT))


def check_s3_credentials(sec: Section, cache: ModelCacheConfig) -> None:
    """`s3Credentials: secret` says `credentialsSecret` carries the AWS keys, so it needs one."""
    if cache.s3_credentials == "secret" and not cache.credentials_secret:
        sec.problem("s3Credentials", cache.s3_credentials, "expected 'serviceAccount' (the default: "
                    "serviceAccountName is an IRSA account), or 'secret' with modelCache.credentialsSecret naming "
                    "the Secret that holds AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")


def check_one_account(sec: Section, cache: ModelCacheConfig) -> None:
    """With the cache off a predictor pod runs as one account: the stack's (listing `credentialsSecret`) or the
    user's (`serviceAccountName`), never both; the stack cannot add the Secret to a user's account."""
    if not cache.enabled and cache.credentials_secret and cache.service_account:
        sec.problem("credentialsSecret", cache.credentials_secret, f"expected credentialsSecret or "
                    f"serviceAccountName, not both, with modelCache.enabled false: {_POD_ACCOUNT}, and the stack "
                    f"cannot add {cache.credentials_secret!r} to {cache.service_account!r}; list it under that "
                    "account's `secrets` and drop credentialsSecret, or drop serviceAccountName")


def check_one_secret_kind(cache: ModelCacheConfig, services: list[ServiceConfig], problems: list[Problem]) -> None:
    """With the cache off, the stack's account lists the one `credentialsSecret`, and KServe takes one kind of
    credential from a Secret, S3 keys before HF_TOKEN (`mountSecretCredential`): gated `hf://` and `s3://` sources
    together need the user's account (IRSA for the buckets, the HF_TOKEN Secret under its `secrets`)."""
    if cache.enabled or cache.service_account or not cache.credentials_secret:
        return
    first: dict[str | None, int] = {}
    for i, svc in enumerate(services):
        first.setdefault(needed_credential(svc.storage_uri, svc.model_public), i)
    if "hf" in first and "s3" in first:
        problems.append(Problem("modelCache.credentialsSecret", cache.credentials_secret, "expected "
                                "modelCache.serviceAccountName instead (an IRSA account for the buckets that lists "
                                "the HF_TOKEN Secret under `secrets`): with modelCache.enabled false, services["
                                f"{first['hf']}] needs HF_TOKEN and services[{first['s3']}] S3 credentials, but "
                                "KServe takes one kind from a Secret, S3 keys before HF_TOKEN (kserve "
                                "pkg/credentials mountSecretCredential), so one download would have none"))

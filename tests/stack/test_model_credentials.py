"""Model-source credentials reach whichever storage initializer downloads the model: the prefetch DaemonSet with the
cache on, KServe's init container in each predictor pod (through its service account) with the cache off."""

from __future__ import annotations

import pytest

from manifests import render_stack
from manifests.model_download import ACCOUNT, model_download_account, predictor_account
from offline import run_program
from program_refusal import refusal
from stackconfig.load import load_stack, stack_names
from validation.admission import ClusterAdmission, admission_refusals
from validation.kubernetes import validation_errors

P = "kserve-preflight"
ISVC = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
SA = "kubernetes:core/v1:ServiceAccount"
GATED = "hf://meta-llama/Meta-Llama-3-8B-Instruct"  # dev's chat model


# A download as fast as the cache's prefetch prior: these tests are about credentials. At the cache-off default
# (KServe's measured storage-initializer rate) dev's and staging's 900-s progress deadlines are too short for a
# rollout, which the program refuses first (tests/stack/test_cold_start_priors.py).
FAST_DOWNLOAD = {"downloadGBps": {"dist": "uniform", "low": 0.5, "high": 2.0}}


def _cache_off(**cache):
    """dev with the cache off, the gate off, and `cache` replacing modelCache's credential keys."""
    def edit(c):
        mc = c[f"{P}:modelCache"]
        mc.pop("credentialsSecret", None)
        mc.update(enabled=False, **cache)
        c[f"{P}:gate"] = {"enabled": False}
        c[f"{P}:coldStart"] = dict(FAST_DOWNLOAD)
    return edit


def _model(**model):
    def edit(c):
        c[f"{P}:services"][0]["model"].update(model)
    return edit


def _both(*edits):
    def edit(c):
        for e in edits:
            e(c)
    return edit


def _predictor(r):
    [isvc] = r.of_type(ISVC)
    return isvc.inputs["spec"]["predictor"]


@pytest.mark.parametrize("edit, where, allowed", [
    pytest.param(_cache_off(), f"services[0].model.storageUri: got '{GATED}'",
                 "expected modelCache.credentialsSecret (a Secret with HF_TOKEN, which the stack lists in its "
                 "ServiceAccount for the predictor) or modelCache.serviceAccountName", id="gated-hf-no-credential"),
    pytest.param(_both(_cache_off(), _model(storageUri="s3://models/llama-3-8b/")),
                 "services[0].model.storageUri: got 's3://models/llama-3-8b/'",
                 "expected modelCache.serviceAccountName (an IRSA ServiceAccount annotated "
                 "eks.amazonaws.com/role-arn", id="s3-no-account"),
    pytest.param(_cache_off(credentialsSecret="hf-token", serviceAccountName="models-irsa"),
                 "modelCache.credentialsSecret: got 'hf-token'",
                 "expected credentialsSecret or serviceAccountName, not both, with modelCache.enabled false",
                 id="secret-and-account"),
    pytest.param(_both(_cache_off(credentialsSecret="hf-token"), _model(storageUri="s3://models/l/")),
                 "services[0].model.storageUri: got 's3://models/l/'",
                 "or modelCache.s3Credentials: secret if credentialsSecret 'hf-token' holds AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY", id="s3-secret-not-said-to-hold-aws-keys"),
])
def test_a_model_the_pod_cannot_download_is_refused_before_any_resource(edit, where, allowed, registered):
    message = refusal("dev", edit, registered)
    assert message.startswith("invalid stack config:") and where in message and allowed in message, message
    assert "storage initializer downloads it in each predictor pod" in message


@pytest.mark.parametrize("edit, account, secret", [
    pytest.param(_cache_off(credentialsSecret="hf-token"), ACCOUNT, "hf-token", id="gated-hf-secret"),
    pytest.param(_cache_off(serviceAccountName="hf-reader"), "hf-reader", None, id="gated-hf-own-account"),
    pytest.param(_both(_cache_off(), _model(public=True)), None, None, id="public-hf"),
    pytest.param(_both(_cache_off(serviceAccountName="models-irsa"), _model(storageUri="s3://models/l/")),
                 "models-irsa", None, id="s3-irsa"),
    pytest.param(_both(_cache_off(credentialsSecret="s3-keys", s3Credentials="secret"),
                       _model(storageUri="s3://models/l/")), ACCOUNT, "s3-keys", id="s3-keys"),
    pytest.param(_both(_cache_off(), _model(storageUri="gs://models/l/")), None, None, id="gs-anonymous"),
    pytest.param(_both(_cache_off(credentialsSecret="hf-token"), _model(storageUri="pvc://weights/l")), None, None,
                 id="pvc-mounted"),
])
def test_controls_reach_the_predictor_as_its_service_account(edit, account, secret):
    """Each rule's control: the config passes, and the predictor runs as the account that holds the credential;
    the stack creates an account only to list `credentialsSecret`."""
    r = run_program("dev", edit=edit)
    assert _predictor(r).get("serviceAccountName") == account
    assert [s.inputs["secrets"] for s in r.of_type(SA)] == ([[{"name": secret}]] if secret else [])


def test_the_stack_account_lists_the_secret_and_the_services_wait_for_it():
    """KServe reads the account when it creates a predictor pod (CreateSecretVolumeAndEnv); a missing one means no
    credential at all, so the InferenceService depends on it, and it on the Namespace."""
    import pulumi_kubernetes as k8s

    r = run_program("dev", edit=_cache_off(credentialsSecret="hf-token"))
    [sa] = r.of_type(SA)
    assert sa.inputs["metadata"]["name"] == ACCOUNT and sa.inputs["metadata"]["namespace"] == "kserve-inference"
    assert sa.inputs["secrets"] == [{"name": "hf-token"}] and sa.inputs["automountServiceAccountToken"] is False
    assert validation_errors(sa.inputs) == []
    assert any(isinstance(d, k8s.core.v1.Namespace) for d in r.options["model-download-sa"].depends_on)
    assert any(isinstance(d, k8s.core.v1.ServiceAccount) for d in r.options["chat-isvc"].depends_on)
    predictor = _predictor(r)
    assert predictor["serviceAccountName"] == ACCOUNT and predictor["model"]["storageUri"] == GATED
    assert predictor["automountServiceAccountToken"] is False  # IRSA's token is mounted by its own webhook


def test_knative_admits_the_predictor_service_account():
    """fieldmask.go PodSpecMask copies serviceAccountName with no feature flag; the ISVC schema has it too."""
    r = run_program("dev", edit=_cache_off(credentialsSecret="hf-token"))
    [isvc] = r.of_type(ISVC)
    assert isvc.inputs["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "Serverless"
    assert validation_errors(isvc.inputs) == []
    refusals = admission_refusals([isvc.inputs], ClusterAdmission())  # upstream defaults: tolerations etc. refused
    assert refusals and not [x for x in refusals if "serviceAccountName" in x.path]


def _staging_cache_off(**cache):
    def edit(c):
        c[f"{P}:modelCache"].pop("credentialsSecret")
        c[f"{P}:modelCache"].pop("serviceAccountName")
        c[f"{P}:modelCache"].update(enabled=False, **cache)
        c[f"{P}:gate"] = {"enabled": False}
        c[f"{P}:coldStart"] = dict(FAST_DOWNLOAD)
    return edit


def test_one_secret_cannot_serve_gated_hf_and_s3_without_the_cache(registered):
    """staging: chat from a gated hf:// repository, vision from s3://. KServe takes one kind of credential from a
    Secret (mountSecretCredential: S3 keys first), so the stack's account cannot serve both."""
    message = refusal("staging", _staging_cache_off(credentialsSecret="hf-token"), registered)
    assert "modelCache.credentialsSecret: got 'hf-token'; expected modelCache.serviceAccountName instead" in message
    assert "services[0] needs HF_TOKEN and services[1] S3 credentials" in message

    def chat_public(c):
        _staging_cache_off(credentialsSecret="s3-keys", s3Credentials="secret")(c)
        c[f"{P}:services"][0]["model"]["public"] = True

    r = run_program("staging", edit=chat_public)  # control: only the bucket needs the Secret
    assert {i.inputs["spec"]["predictor"].get("serviceAccountName") for i in r.of_type(ISVC)} == {ACCOUNT}


def test_standard_mode_services_get_the_account_too():
    """staging's vision service (Standard mode, s3://) with the cache off runs as the user's IRSA account."""
    r = run_program("staging", edit=_staging_cache_off(serviceAccountName="models-irsa"))
    assert {i.inputs["metadata"]["name"]: i.inputs["spec"]["predictor"]["serviceAccountName"]
            for i in r.of_type(ISVC)} == {"chat": "models-irsa", "vision": "models-irsa"}
    assert r.of_type(SA) == []  # the user's account: the stack creates none


@pytest.mark.parametrize("stack", stack_names())
def test_shipped_stacks_with_the_cache_need_no_pod_account(stack):
    """The cache serves every shipped model (pvc://): no account, no serviceAccountName, manifests as before."""
    cfg = load_stack(stack)
    assert model_download_account(cfg) is None
    assert [predictor_account(cfg, s) for s in cfg.services] == [None] * len(cfg.services)
    assert not [m for m in render_stack(cfg) if m["kind"] == "ServiceAccount"
                or "serviceAccountName" in m.get("spec", {}).get("predictor", {})]


def test_with_the_cache_both_keys_go_to_the_prefetch_pod():
    """Control for `secret-and-account`: with the cache on, the DaemonSet takes both (IRSA account + env Secret)."""
    r = run_program("dev", edit=lambda c: (c[f"{P}:modelCache"].update(serviceAccountName="models-irsa"),
                                           c.__setitem__(f"{P}:gate", {"enabled": False})))
    assert r.of_type(SA) == [] and "serviceAccountName" not in _predictor(r)


# With the cache on, the prefetch DaemonSet downloads s3:// models with boto3's default chain (kserve
# storage `_download_s3`: boto3.resource("s3") with no keys of its own), whose last resort is the node's instance
# role, which reads no S3 unless someone granted it; the stack does not count on that.
BUCKET = "s3://models/llama-3-8b/"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"


def _cache_on(**cache):
    """dev with the cache on, the gate off, its model from a bucket and `cache` merged into modelCache
    (None removes a key: dev sets credentialsSecret hf-token)."""
    def edit(c):
        mc = c[f"{P}:modelCache"]
        mc.update(cache)
        for key in [k for k, v in mc.items() if v is None]:
            del mc[key]
        c[f"{P}:services"][0]["model"]["storageUri"] = BUCKET
        c[f"{P}:gate"] = {"enabled": False}
    return edit


def _prefetch_pod(r):
    [ds] = [d for d in r.of_type(DAEMONSET) if d.name == "model-cache-prefetch"]
    assert validation_errors(ds.inputs) == []
    return ds.inputs["spec"]["template"]["spec"]


@pytest.mark.parametrize("edit, where, allowed", [
    pytest.param(_cache_on(), f"services[0].model.storageUri: got '{BUCKET}'",
                 "expected modelCache.serviceAccountName (an IRSA ServiceAccount annotated eks.amazonaws.com/role-arn "
                 "whose role may s3:ListBucket and s3:GetObject on the bucket), or modelCache.s3Credentials: secret "
                 "if credentialsSecret 'hf-token' holds AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: with "
                 "modelCache.enabled true, the prefetch DaemonSet downloads it with boto3 on every Linux node, which "
                 "without either falls back to that node's instance role", id="s3-hf-token-only"),
    pytest.param(_cache_on(credentialsSecret=None), f"services[0].model.storageUri: got '{BUCKET}'",
                 "or modelCache.credentialsSecret with modelCache.s3Credentials: secret, a Secret with "
                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: with modelCache.enabled true", id="s3-no-credential"),
    pytest.param(_cache_on(credentialsSecret=None, serviceAccountName="models-irsa", s3Credentials="secret"),
                 "modelCache.s3Credentials: got 'secret'", "expected 'serviceAccount' (the default: "
                 "serviceAccountName is an IRSA account), or 'secret' with modelCache.credentialsSecret naming the "
                 "Secret that holds AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", id="secret-said-none-named"),
    pytest.param(_cache_on(serviceAccountName="models-irsa", s3Credentials="irsa"),
                 "modelCache.s3Credentials: got 'irsa'", "expected one of 'serviceAccount', 'secret'",
                 id="unknown-kind"),
])
def test_a_cached_s3_model_without_a_credential_is_refused(edit, where, allowed, registered):
    message = refusal("dev", edit, registered)
    assert message.startswith("invalid stack config:") and where in message and allowed in message, message


@pytest.mark.parametrize("cache, account, secret", [
    pytest.param({"serviceAccountName": "models-irsa"}, "models-irsa", "hf-token", id="irsa"),
    pytest.param({"credentialsSecret": "s3-keys", "s3Credentials": "secret"}, None, "s3-keys", id="aws-keys"),
    pytest.param({"serviceAccountName": "models-irsa", "s3Credentials": "secret"}, "models-irsa", "hf-token",
                 id="both"),
])
def test_a_cached_s3_model_with_a_credential_reaches_the_prefetch_pod(cache, account, secret):
    """Controls: the prefetch pod runs as the IRSA account (the pod identity webhook projects its token itself, so
    no API token) and/or takes the Secret as environment; the predictor reads the cache and needs neither."""
    r = run_program("dev", edit=_cache_on(**cache))
    pod = _prefetch_pod(r)
    assert pod.get("serviceAccountName") == account and pod["automountServiceAccountToken"] is False
    assert pod["containers"][0]["envFrom"] == [{"secretRef": {"name": secret}}]
    assert _predictor(r)["model"]["storageUri"].startswith("pvc://") and "serviceAccountName" not in _predictor(r)
    assert r.of_type(SA) == []


def test_staging_vision_bucket_is_read_through_an_irsa_account(registered):
    """staging's vision model is s3://example-models/…: without its IRSA account the stack is refused, naming the
    service; with it (the shipped stack) the prefetch pod has both the HF_TOKEN Secret and the account."""
    def no_account(c):
        del c[f"{P}:modelCache"]["serviceAccountName"]
        c[f"{P}:gate"] = {"enabled": False}

    assert ("services[1].model.storageUri: got 's3://example-models/vit-large-16/'; expected "
            "modelCache.serviceAccountName") in refusal("staging", no_account, registered)

    cfg = load_stack("staging")
    assert (cfg.model_cache.service_account, cfg.model_cache.credentials_secret) == ("model-cache-reader", "hf-token")
    pod = _prefetch_pod(run_program("staging", edit=lambda c: c.__setitem__(f"{P}:gate", {"enabled": False})))
    assert pod["serviceAccountName"] == "model-cache-reader" and pod["automountServiceAccountToken"] is False
    assert pod["containers"][0]["envFrom"] == [{"secretRef": {"name": "hf-token"}}]

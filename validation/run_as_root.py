"""Would the kubelet start the serving container? With `runAsNonRoot: true` it refuses a container whose user is
root (`pkg/kubelet/kuberuntime/security_context_others.go: verifyRunAsNonRoot`: CreateContainerConfigError on every
try), and Knative's revision defaulting sets that on the user container when `secure-pod-defaults` is Enabled
(`pkg/apis/serving/v1/revision_defaults.go: defaultSecurityContext`, Knative 1.20+: not with AllowRootBounded, and
an explicit `false` is kept). Called for every InferenceService by validation/admission.py `admission_refusals`."""

from __future__ import annotations

from typing import Iterator, Mapping

from validation.cluster_admission import ClusterAdmission, Refusal


# Serving images whose user is root: the image repository's last path component (any registry, tag or digest) →
# why. An image not named here (a custom or mirrored-and-renamed one) is accepted: its user is unknown offline.
# KServe's huggingfaceserver runs as USER 1000 (python/huggingface_server.Dockerfile, v0.15–v0.19), so it is not here.
ROOT_IMAGES: dict[str, str] = {
    "text-generation-inference": "TGI's Dockerfile sets no USER, v1.4 through v3.3",
    "vllm-openai": "vLLM's docker/Dockerfile sets no USER in its vllm-openai target",
    "tritonserver": "Triton's build.py creates user triton-server (uid 1000) but sets no USER",
}
# What runs instead, per root image.
NON_ROOT_ALTERNATIVE = {
    "text-generation-inference": "an image that runs as a non-root user, e.g. KServe's huggingfaceserver "
                                 "(runtime.image kserve/huggingfaceserver:v0.15.2-gpu, USER 1000) with engine vllm",
    "vllm-openai": "an image that runs as a non-root user, e.g. KServe's huggingfaceserver "
                   "(runtime.image kserve/huggingfaceserver:v0.15.2-gpu, USER 1000), which serves vLLM",
    "tritonserver": "runAsUser: 1000 (the image's triton-server user), as KServe's kserve-tritonserver runtime sets",
}
KUBELET_NON_ROOT = "kubelet kuberuntime/security_context_others.go verifyRunAsNonRoot"


def _image_repository(image: str) -> str:
    """`ghcr.io/huggingface/text-generation-inference:3.3.4@sha256:…` → `text-generation-inference`."""
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def run_as_root_refusals(obj: str, pred: Mapping, cluster: ClusterAdmission, knative_mode: bool) -> Iterator[Refusal]:
    """Containers the kubelet never starts: `runAsNonRoot: true` on a container whose user is root
    (verifyRunAsNonRoot: 'container has runAsNonRoot and image will run as root', or "container's runAsUser breaks
    non-root policy" for runAsUser 0; CreateContainerConfigError on every try, so the revision never becomes Ready
    and `pulumi up` waits out its timeout). `runAsNonRoot` is the container's, else the pod's; in Knative mode,
    when both are unset and `secure-pod-defaults` is Enabled, Knative's revision defaulting sets it to true
    (`ClusterAdmission.sets_run_as_non_root`; AllowRootBounded and Disabled do not, and an explicit `false` is
    kept). The user is `runAsUser` (container, else pod), else the image's own: known only for `ROOT_IMAGES`, so
    an unknown or custom image without runAsUser is accepted. Only `spec.predictor.containers`: a
    `spec.predictor.model` runs on a serving runtime whose securityContext KServe merges in
    (kserve-huggingfaceserver's image is USER 1000, kserve-tritonserver sets runAsUser 1000)."""
    pod_sc = pred.get("securityContext") if isinstance(pred.get("securityContext"), Mapping) else {}
    for i, c in enumerate(pred.get("containers") or []):
        if not isinstance(c, Mapping):
            continue
        sc = c.get("securityContext") if isinstance(c.get("securityContext"), Mapping) else {}
        given = sc.get("runAsNonRoot") if sc.get("runAsNonRoot") is not None else pod_sc.get("runAsNonRoot")
        defaulted = given is None and knative_mode and cluster.sets_run_as_non_root()
        if given is not True and not defaulted:
            continue
        user = sc.get("runAsUser") if sc.get("runAsUser") is not None else pod_sc.get("runAsUser")
        image = str(c.get("image", ""))
        repo = _image_repository(image)
        if user is not None and user != 0 or user is None and repo not in ROOT_IMAGES:
            continue
        path = f"spec.predictor.containers[{i}]"
        if defaulted:
            cause = ("secure-pod-defaults is 'enabled' in knative-serving/config-features "
                     "(knative.features.secure-pod-defaults), so Knative's revision defaulting sets runAsNonRoot: true "
                     "on the container (revision_defaults.go defaultSecurityContext)")
            rule = "revision_defaults.go defaultSecurityContext, " + KUBELET_NON_ROOT
        else:
            cause = "its securityContext sets runAsNonRoot: true"
            rule = KUBELET_NON_ROOT
        if user is not None:  # runAsUser 0
            yield Refusal(obj, f"{path}.securityContext.runAsUser", rule, f"runAsUser 0 is root and {cause}: the "
                          "kubelet refuses to start it (CreateContainerConfigError: \"container's runAsUser breaks "
                          "non-root policy\") and the pod never becomes Ready; set a non-zero runAsUser")
            continue
        fixes = NON_ROOT_ALTERNATIVE[repo]
        if defaulted:
            fixes += ("; or, if the cluster's config-features says otherwise, set knative.features."
                      "secure-pod-defaults to what it has (AllowRootBounded and disabled set no runAsNonRoot)")
        yield Refusal(obj, f"{path}.image", rule, f"{image!r} (the service's runtime.image, or its engine's "
                      f"default) runs as root ({ROOT_IMAGES[repo]}) and {cause}: the kubelet refuses to start it "
                      "(CreateContainerConfigError: 'container has runAsNonRoot and image will run as root'), so the "
                      f"pod never becomes Ready and `pulumi up` waits out its timeout; use {fixes}")

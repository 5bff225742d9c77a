"""Labels and small pieces every manifest shares."""

from __future__ import annotations

PART_OF = "kserve-preflight"


def labels(name: str, component: str, instance: str | None = None) -> dict[str, str]:
    """Kubernetes' recommended labels (kubernetes.io/docs/concepts/overview/working-with-objects/common-labels)."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": instance or name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": "pulumi",
    }


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels(name, "namespace")}}


def restricted_security_context(read_only_root: bool = False, non_root: bool = False) -> dict:
    """The 'restricted' Pod Security Standard at container level: no privilege escalation, all capabilities
    dropped, the runtime's default seccomp profile, and — where the image runs as a non-root user — runAsNonRoot.
    Container level, because Knative admits these fields there but a pod-level securityContext only behind the
    `kubernetes.podspec-securitycontext` flag (fieldmask.go SecurityContextMask vs PodSecurityContextMask)."""
    ctx: dict = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                 "seccompProfile": {"type": "RuntimeDefault"}}
    if non_root:
        ctx["runAsNonRoot"] = True
    if read_only_root:
        ctx["readOnlyRootFilesystem"] = True
    return ctx

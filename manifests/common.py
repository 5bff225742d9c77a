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


def restricted_security_context(read_only_root: bool = False) -> dict:
    """No privilege escalation and no added capabilities (the 'restricted' Pod Security Standard's core)."""
    ctx = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    if read_only_root:
        ctx["readOnlyRootFilesystem"] = True
    return ctx

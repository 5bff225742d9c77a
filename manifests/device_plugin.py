"""The NVIDIA device plugin DaemonSet: advertises `nvidia.com/gpu` on the GPU nodes.

Follows NVIDIA/k8s-device-plugin's static manifest (`deployments/static/nvidia-device-plugin.yml`): the plugin
registers with the kubelet over a socket in /var/lib/kubelet/device-plugins, tolerates the GPU taint and runs at
`system-node-critical` so it is never evicted before the pods that need it. The AL2023 NVIDIA AMI ships the
driver and container toolkit but not this plugin (../shared/reference/pulumi-offline-testing.md §4); Bottlerocket
NVIDIA variants run it on the host, so the stack deploys it only where `StackConfig.deploys_device_plugin` (not on
Bottlerocket, and not with `devicePlugin.enabled: false`, for a cluster whose GPU Operator already runs one).
"""

from __future__ import annotations

from manifests.common import labels, restricted_security_context
from stackconfig.schema import GPU_LABEL, StackConfig

NAME = "nvidia-device-plugin"


def device_plugin_daemonset(cfg: StackConfig) -> dict:
    dp, ng = cfg.device_plugin, cfg.node_group
    meta_labels = labels(NAME, "device-plugin")
    select = {"app.kubernetes.io/name": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": dp.namespace, "labels": meta_labels},
        "spec": {
            "selector": {"matchLabels": select},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": meta_labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": dict(GPU_LABEL),
                    "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in ng.taints],
                    "containers": [{
                        "name": NAME,
                        "image": dp.image,
                        "env": [{"name": "FAIL_ON_INIT_ERROR", "value": "false"}],
                        "securityContext": restricted_security_context(),
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                      "limits": {"cpu": "200m", "memory": "256Mi"}},
                        "volumeMounts": [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}],
                    }],
                    "volumes": [{"name": "device-plugin",
                                 "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}}],
                },
            },
        },
    }

"""NvidiaDevicePlugin: the DaemonSet that makes `nvidia.com/gpu` schedulable on the GPU nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.kubernetes_object import child_options, kubernetes_object
from manifests.device_plugin import device_plugin_daemonset
from stackconfig.schema import StackConfig


@dataclass
class NvidiaDevicePluginArgs:
    daemonset: dict  # manifests.device_plugin.device_plugin_daemonset()

    @classmethod
    def from_config(cls, cfg: StackConfig) -> "NvidiaDevicePluginArgs":
        return cls(device_plugin_daemonset(cfg))


class NvidiaDevicePlugin(pulumi.ComponentResource):
    def __init__(self, name: str, args: NvidiaDevicePluginArgs,
                 opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:infra:NvidiaDevicePlugin", name, {}, opts)
        self.daemonset = kubernetes_object(f"{name}-ds", args.daemonset, child_options(self, opts))
        self.register_outputs({"daemonset": self.daemonset.metadata["name"]})

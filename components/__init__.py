"""Thin Pulumi components: each hands dicts built by `manifests` to Pulumi, parented and named after itself."""

from components.device_plugin import NvidiaDevicePlugin, NvidiaDevicePluginArgs
from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.inference_service import TunedInferenceService, TunedInferenceServiceArgs
from components.model_cache import ModelCache, ModelCacheArgs

__all__ = ["GpuNodeGroup", "GpuNodeGroupArgs", "NvidiaDevicePlugin", "NvidiaDevicePluginArgs", "ModelCache",
           "ModelCacheArgs", "TunedInferenceService", "TunedInferenceServiceArgs"]

"""Annotation keys that the stack writes and that the simulation, the admission checks and the policy pack read,
stated once: a key renamed here is renamed for its writer and every reader.

Standard library only, like validation/defaults.py (the policy pack imports it, policy/requirements.txt).
"""

from __future__ import annotations

# KServe pkg/constants/constants.go: DeploymentMode, AutoscalerClass.
MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"

# Knative Serving pkg/apis/autoscaling/register.go (the revision's autoscaling annotations) and
# pkg/apis/serving/register.go (ProgressDeadlineAnnotationKey).
KNATIVE_PREFIX = "autoscaling.knative.dev/"
INITIAL_SCALE = KNATIVE_PREFIX + "initial-scale"
ACTIVATION_SCALE = KNATIVE_PREFIX + "activation-scale"
# MaxScaleAnnotation (kmap.KeyPriority: the kebab key wins).
MAX_SCALE_KEYS = (KNATIVE_PREFIX + "max-scale", KNATIVE_PREFIX + "maxScale")
PROGRESS_DEADLINE_KEY = "serving.knative.dev/progress-deadline"

# The stack's own annotations (manifests/inference_service.py writes them; no pod reads them).
PREFLIGHT_PREFIX = "preflight.kserve.io/"
ENGINE_ANNOTATION = PREFLIGHT_PREFIX + "engine"
MODEL_ANNOTATION = PREFLIGHT_PREFIX + "model"
# With `knative.manageAutoscaler: false`, the config-autoscaler values the stack declares the cluster has (JSON), for
# the policies; a patched stack's ConfigMapPatch carries them instead.
CONFIG_AUTOSCALER_ANNOTATION = PREFLIGHT_PREFIX + "config-autoscaler"
# Caps a runtime cannot take as an argument: Triton reads them from the model repository's `config.pbtxt`
# (`max_batch_size`, `dynamic_batching.default_queue_policy.max_queue_size`, the input tensor's `dims`). The user
# declares there what the stack config says; these annotations carry the declared values to the simulation and
# the policies, so the model repository and the stack must agree (docs/deploying.md).
TRITON_CAP_ANNOTATIONS = {"max_batch_size": PREFLIGHT_PREFIX + "triton-max-batch-size",
                          "max_pixels": PREFLIGHT_PREFIX + "triton-max-image-pixels",
                          "max_queue_delay_microseconds": PREFLIGHT_PREFIX + "triton-max-queue-delay-microseconds",
                          "max_queue_size": PREFLIGHT_PREFIX + "triton-max-queue-size"}

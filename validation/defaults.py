"""Upstream defaults read both by the simulation and by the policy pack, stated once.

Standard library only: the CrossGuard analyzer's virtualenv (policy/requirements.txt) has neither SimPy nor
NumPy, so the policy cannot import them from the simulation's modules that model these servers.
"""

from __future__ import annotations

# knative/serving pkg/apis/config/defaults.go DefaultRevisionTimeoutSeconds: a revision without `timeoutSeconds`
# (KServe: a predictor without `timeout`) cuts a request off after this long.
KNATIVE_DEFAULT_TIMEOUT_S = 300
# text-generation-inference launcher/src/main.rs `--max-concurrent-requests` default: the router answers 429
# "Model is overloaded" to one request more.
TGI_DEFAULT_MAX_CONCURRENT_REQUESTS = 128
# Where the model server listens: the port Knative's queue-proxy and KServe's raw Service send requests to (and
# the probes go): KServe's runtimes and the stack's custom predictors serve HTTP on it.
SERVING_PORT = 8080
# kserve pkg/constants/constants.go DefaultModelLocalMountPath: where the storage initializer puts the model.
MODEL_MOUNT = "/mnt/models"
# knative/serving config-defaults container-concurrency-max-limit: the largest containerConcurrency admitted.
KNATIVE_CC_MAX = 1000
# kserve pkg/constants/constants.go DefaultMinReplicas: a predictor without `minReplicas` gets min-scale 1.
KSERVE_DEFAULT_MIN_REPLICAS = 1

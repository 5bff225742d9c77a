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

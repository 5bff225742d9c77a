"""tritonserver's options (`FLAGS`): how each value is read, and what the stack accepts of it (the reader:
simulation/engine_flags_triton.py). Sources: triton-inference-server/server `src/command_line_parser.cc`
(`TritonParser::SetupOptions`, `Parse`) and KServe `config/runtimes/kserve-tritonserver.yaml`.

What the stack accepts (an allow-list, as for the other servers): flags that restate what KServe's runtime and the
gate assume (HTTP on 0.0.0.0:8080, the model repository /mnt/models, every model in it loaded at start-up and
`/v2/health/ready` answering 200 only once they are: `--strict-readiness` true, metrics on 8002), and flags that
change neither GPU memory nor scheduling (ids, logging, tracing, gRPC's own settings, thread counts, directories).
Refused: what stops start-up (unknown flags, values Triton refuses, positionals, `--load-model` outside explicit
mode), what moves the server off what the probes, the queue-proxy or the autoscaler's metrics use, what loads a
different set of models (`explicit` without a `--load-model`, several models, `poll`, a second repository) or makes
the pod Ready before its model is (`--strict-readiness=false`), and what the simulation does not model: Triton's
CUDA and pinned memory pools, its rate limiter, response cache, backend settings other than the python backend's
(simulation/triton_backend_config.py) and host policies.
- The simulation serves one model per pod, the service's, which the storage initializer puts in /mnt/models: Triton
  loads it by default (every model of the repository), with `--load-model=*`, or named (`--model-control-mode=
  explicit --load-model=<its directory>`, which loads only it). The stack does not see the repository, so it takes
  the name on trust, as it takes the repository's config.pbtxt; a name not there fails that model's load at
  start-up, as a broken config.pbtxt does.

`--exit-on-error` is read and left alone: with the model loading (the stack checks it fits) it changes nothing, and
a model that fails to load leaves the pod un-Ready either way (exit and restart, or a live server whose readiness
never passes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from simulation.triton_backend_config import backend_problem, backend_setting
from simulation.triton_flag_values import (as_given, c_bool, c_int, int_bool, nonempty, one_of, ranged, setting,
                                           trace_setting)
from validation.defaults import MODEL_MOUNT, SERVING_PORT

TRITON = "tritonserver"
MODEL_REPOSITORY = MODEL_MOUNT           # the runtime's --model-store (kserve constants.DefaultModelLocalMountPath)
HTTP_PORT, METRICS_PORT, ANY_ADDRESS = SERVING_PORT, 8002, "0.0.0.0"
HTTP_DEFAULT_MAX_INPUT_SIZE = 1 << 26   # src/common.h: 64 MiB


@dataclass(frozen=True)
class TritonFlag:
    """One of tritonserver's options: how its value is read, and what the stack accepts of it."""
    parse: Callable[[str], Any] | None = as_given   # None: a switch, which takes no value
    expects: str = "a value"                        # what Triton reads, for a value it refuses
    since: tuple[int, int] | None = None            # the first release that knows it (None: 23.05 or earlier)
    refused: str = ""                               # why the stack refuses it whatever its value
    accepts: Callable[[Any], bool] | None = None    # the values the stack accepts (None: all Triton reads)
    why: str = ""                                   # why another value is refused
    judge: Callable[[Any, Any], str] | None = None  # (value, release) → why the stack refuses it, "" if it does not


_INT, _BOOL = "an integer (std::stoi)", "true, false, on, off, 1 or 0 (any case)"
_I, _B, _S = TritonFlag(c_int, _INT), TritonFlag(c_bool, _BOOL), TritonFlag()
_PORT = TritonFlag(ranged(0, 65535), "a port, 0 to 65535 (Triton reads any int and then cannot bind another)")
_MEMORY = ("it sizes memory Triton sets aside on the GPU or the host, which the simulation does not model (its "
           "memory model, simulation/gpu/triton.py, counts weights, overhead and per-image activations)")
_OTHER_PLATFORM = ("it serves another platform's protocol (Amazon SageMaker, Google Vertex AI), whose port defaults to "
                   "8080, the HTTP port KServe routes to: Triton refuses two endpoints on one port "
                   "(CheckPortCollision), and KServe clients speak the v2 protocol")


def _only(value: Any, expected: str, consequence: str) -> dict:
    """`accepts` and `why` for a flag the stack accepts only restating `value`."""
    return {"accepts": lambda v: v == value, "why": f"expected {expected} or no such flag: {consequence}"}


_SCRAPED = ("KServe's runtime tells Prometheus to scrape Triton's metrics on 0.0.0.0:8002 (prometheus.kserve.io/port), "
            "and the stack's KEDA scaler for Triton reads nv_inference_request_duration_us there (manifests/keda.py)")
_RATE_LIMITER = ("the rate limiter schedules model instances by resources and priorities, which the simulation's "
                 "dynamic batcher does not model")
_RESPONSE_CACHE = ("Triton's response cache answers repeated requests without the GPU, which the simulation does not "
                   "model")
_REPOSITORY = _only(MODEL_REPOSITORY, MODEL_REPOSITORY, "KServe's runtime already serves /mnt/models "
                    "(--model-store), where the storage initializer puts the model; another path is a second "
                    "repository the stack cannot see: a missing one stops start-up (--exit-on-error), its models load "
                    "beside this one on the GPU, and a model found in both (/mnt/models/ is another path to the same "
                    "one) is unavailable")


def _keeps_latency_counter(text: str) -> bool:
    name, _, value = text.partition("=")
    return name.strip().lower() != "counter_latencies" or value.strip().lower() not in ("false", "off", "0")

FLAGS: dict[str, TritonFlag] = {
    # -- restated or checked: what KServe's runtime and the gate assume --------------------------------------------
    "--model-repository": TritonFlag(**_REPOSITORY),
    "--model-store": TritonFlag(**_REPOSITORY),
    "--http-port": TritonFlag(c_int, _INT, **_only(HTTP_PORT, str(HTTP_PORT), "KServe's runtime starts Triton with "
                              "--http-port=8080, the container port the probes and Knative's queue-proxy connect to; "
                              "a later --http-port wins, so the server listens elsewhere, no probe connects and the "
                              "pod is never Ready")),
    "--allow-http": TritonFlag(c_bool, _BOOL, **_only(True, "true", "with HTTP off Triton answers no probe and no "
                               "request on 8080 (the stack serves and probes HTTP only), so the pod is never Ready")),
    "--http-address": TritonFlag(**_only(ANY_ADDRESS, ANY_ADDRESS, "the kubelet probes the pod's IP and Knative's "
                                 "queue-proxy connects to 127.0.0.1; only 0.0.0.0 answers both")),
    "--strict-readiness": TritonFlag(c_bool, _BOOL, **_only(True, "true", "with false /v2/health/ready answers 200 "
                                     "as soon as the server responds, before its model is loaded, so the probes "
                                     "mark the pod Ready and requests reach it early; the simulation makes a pod "
                                     "Ready only once its model is loaded")),
    "--model-control-mode": TritonFlag(one_of("none", "poll", "explicit"), "none, poll or explicit (any case)",
                                       accepts=lambda v: v != "poll",
                                       why="expected none, or explicit with --load-model=*: in poll mode Triton "
                                           "loads and unloads models as the repository changes (a pvc:// volume "
                                           "changed under a running pod; a reload holds both copies on the GPU), "
                                           "which the simulation does not model, and Triton's model management "
                                           "guide advises against it in production"),
    "--load-model": TritonFlag(accepts=bool, why="expected a model's name (its directory in /mnt/models) or *: an "
                                                 "empty name is no model of the repository, so its load fails at "
                                                 "start-up"),
    "--allow-metrics": TritonFlag(c_bool, _BOOL, **_only(True, "true", _SCRAPED)),
    "--metrics-port": TritonFlag(_PORT.parse, _PORT.expects, **_only(METRICS_PORT, "8002", _SCRAPED)),
    "--metrics-address": TritonFlag(**_only(ANY_ADDRESS, ANY_ADDRESS, _SCRAPED)),
    "--metrics-config": TritonFlag(setting, "<setting>=<value>", accepts=_keeps_latency_counter,
                                   why="expected no counter_latencies=false: " + _SCRAPED),
    "--rate-limit": TritonFlag(one_of("execution_count", "off"), "execution_count or off (any case)",
                               **_only("off", "off", _RATE_LIMITER)),
    "--http-max-input-size": TritonFlag(ranged(1, bits=64), "an integer > 0 (std::stoll; Triton: 'must be "
                                        "greater than 0')", since=(25, 6),
                                        accepts=lambda v: v >= HTTP_DEFAULT_MAX_INPUT_SIZE,
                                        why=f"expected at least {HTTP_DEFAULT_MAX_INPUT_SIZE} (the default, 64 MiB) "
                                            "or no such flag: a smaller cap answers larger requests with an error "
                                            "the simulation does not model (limits.maxImagePixels is the modelled "
                                            "cap)"),
    "--allow-sagemaker": TritonFlag(c_bool, _BOOL, **_only(False, "false", _OTHER_PLATFORM)),
    "--allow-vertex-ai": TritonFlag(c_bool, _BOOL, **_only(False, "false", _OTHER_PLATFORM)),
    # -- refused whatever the value --------------------------------------------------------------------------------
    "--help": TritonFlag(None, refused="tritonserver prints its usage and exits, and the pod crash-loops"),
    "--cuda-memory-pool-byte-size": TritonFlag(refused=_MEMORY),
    "--pinned-memory-pool-byte-size": TritonFlag(refused=_MEMORY),
    "--cuda-virtual-address-size": TritonFlag(refused=_MEMORY, since=(23, 11)),
    "--model-load-gpu-limit": TritonFlag(refused="Triton refuses to load a model while the GPU's memory in use "
                                                 "exceeds the fraction, a load failure the simulation does not "
                                                 "model"),
    "--min-supported-compute-capability": TritonFlag(refused="Triton leaves a GPU below it unused, and the "
                                                             "simulation always runs the model on the pod's GPU"),
    "--host-policy": TritonFlag(refused="it pins memory and threads to NUMA nodes and CPU cores, which the "
                                        "simulation does not model"),
    "--rate-limit-resource": TritonFlag(refused=_RATE_LIMITER),
    "--response-cache-byte-size": TritonFlag(refused=_RESPONSE_CACHE),
    "--cache-config": TritonFlag(refused=_RESPONSE_CACHE),
    "--backend-config": TritonFlag(backend_setting, "[<backend>,]<setting>=<value> (ParseBackendConfigOption)",
                                   judge=backend_problem),
    "--http-restricted-api": TritonFlag(refused="Triton then answers a restricted API only to requests carrying "
                                                "the header, which neither the probes nor the simulated clients send",
                                        since=(23, 11)),
    **{name: TritonFlag(refused=_OTHER_PLATFORM) for name in (
        "--sagemaker-port", "--sagemaker-safe-port-range", "--sagemaker-thread-count", "--vertex-ai-port",
        "--vertex-ai-thread-count", "--vertex-ai-default-model")},
    # -- neutral: change neither GPU memory nor scheduling ------------------------------------------------------
    "--exit-on-error": _B,
    "--disable-auto-complete-config": TritonFlag(None),
    "--strict-model-config": _B,
    "--model-config-name": TritonFlag(nonempty, "a non-empty name (Triton: 'empty argument')", since=(24, 5)),
    "--model-namespacing": _B,
    "--enable-peer-access": TritonFlag(c_bool, _BOOL, since=(24, 6)),
    "--allow-client-shm": TritonFlag(c_bool, _BOOL, since=(26, 4)),
    "--model-load-thread-count": _I, "--model-load-retry-count": TritonFlag(c_int, _INT, since=(24, 1)),
    "--repository-poll-secs": _I,       # read only in poll mode (refused above); otherwise Triton sets it to 0
    "--id": _S, "--exit-timeout-secs": _I, "--buffer-manager-thread-count": _I,
    "--backend-directory": _S, "--repoagent-directory": _S, "--cache-directory": _S,
    "--log-verbose": TritonFlag(int_bool, "true, false or an integer (ParseIntBoolOption)"),
    "--log-info": _B, "--log-warning": _B, "--log-error": _B, "--log-file": _S,
    "--log-format": TritonFlag(one_of("default", "ISO8601", any_case=False), "default or ISO8601"),
    "--reuse-http-port": _B, "--http-thread-count": _I, "--http-header-forward-pattern": _S,
    "--allow-grpc": _B, "--grpc-port": _PORT, "--grpc-address": _S, "--reuse-grpc-port": _B,
    "--grpc-header-forward-pattern": _S, "--grpc-infer-allocation-pool-size": _I,
    "--grpc-infer-thread-count": TritonFlag(ranged(2, 128), "an integer from 2 to 128", since=(25, 4)),
    "--grpc-max-response-pool-size": TritonFlag(ranged(1), "an integer > 0", since=(25, 3)),
    "--grpc-use-ssl": _B, "--grpc-use-ssl-mutual": _B, "--grpc-server-cert": _S, "--grpc-server-key": _S,
    "--grpc-root-cert": _S,
    "--grpc-infer-response-compression-level": TritonFlag(one_of("none", "low", "medium", "high"),
                                                          "none, low, medium or high (any case)"),
    "--grpc-keepalive-time": _I, "--grpc-keepalive-timeout": _I, "--grpc-keepalive-permit-without-calls": _B,
    "--grpc-http2-max-pings-without-data": _I, "--grpc-http2-min-recv-ping-interval-without-data": _I,
    "--grpc-http2-max-ping-strikes": _I, "--grpc-restricted-protocol": _S,
    "--grpc-max-connection-age": TritonFlag(c_int, _INT, since=(24, 1)),
    "--grpc-max-connection-age-grace": TritonFlag(c_int, _INT, since=(24, 1)),
    "--allow-gpu-metrics": _B, "--allow-cpu-metrics": _B, "--metrics-interval-ms": _I,
    "--trace-config": TritonFlag(trace_setting, "[triton|opentelemetry,]<setting>=<value>"),
    "--trace-file": _S, "--trace-rate": _I, "--trace-count": _I, "--trace-log-frequency": _I,
    "--trace-level": TritonFlag(one_of("off", "false", "on", "true", "min", "max", "timestamps", "tensors"),
                                "off, timestamps, tensors (or false, on, true, min, max; any case)"),
}


# Flags each occurrence of which adds to a list (command_line_parser.cc: the repository paths, the models to load,
# the metrics and trace settings): every one counts. Any other setting is overwritten by a later one (getopt_long's
# loop assigns it again), so only the last is held to what the stack accepts.
ADDITIVE = frozenset({"--model-repository", "--model-store", "--load-model", "--metrics-config", "--trace-config",
                      "--backend-config"})

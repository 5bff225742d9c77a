"""Triton Inference Server's command line (`tritonserver`), read as it reads it: the `runtime.args` check for engine
`triton` (`simulation/engine_flags.py` `read_args` hands Triton's args here, and holds the gRPC port to the ports
the pod already uses, `engine_flag_tables.taken_ports`, as it does every server's).

Sources: triton-inference-server/server `src/command_line_parser.cc` (`TritonParser::SetupOptions` for the names
and value kinds, `Parse` for how each value is read and the checks after parsing, `CheckPortCollision`), at the
release tags v2.34.0 (container 23.05) to v2.71.0 for when a flag appeared (`build.py`: 2.34.0 is 23.05, 2.40.0
23.11, 2.42.0 24.01, 2.46.0 24.05, 2.47.0 24.06, 2.56.0 25.03, 2.57.0 25.04, 2.59.0 25.06, 2.68.0 26.04); KServe
`config/runtimes/kserve-tritonserver.yaml` (the runtime starts `tritonserver --model-store=/mnt/models
--grpc-port=9000 --http-port=8080 --allow-grpc=true --allow-http=true` and tells Prometheus to scrape port 8002)
and `config/runtimes/kustomization.yaml` (its image `nvcr.io/nvidia/tritonserver:23.05-py3`, KServe 0.15–0.20).

How Triton reads its command line:
- KServe appends `runtime.args` to the runtime's own args (stackconfig/runtimes.py), so a user's flag comes last
  and, for a setting Triton keeps one value of, wins: `--http-port=8000` moves the server off 8080, where the
  probes and Knative's queue-proxy connect. `--model-repository`/`--model-store` and `--load-model` add to a set.
- glibc `getopt_long` with no short options: `--flag=value` or `--flag value` (the next argument, whatever it
  starts with); `--help` and `--disable-auto-complete-config` take no value. An unknown option, a short one, a
  missing value, a value on a switch or an ambiguous abbreviation is '?', and `Parse` throws: tritonserver prints
  its usage and exits, so the pod crash-loops. A non-option argument is permuted to the end and refused
  ('Unexpected argument'); `--` ends the options. getopt also takes an unambiguous abbreviation (`--http-p`): the
  stack refuses it, naming the flag, since it checks flags by their full name.
- Values: an integer is `std::stoi` (leading spaces, a sign, digits; whatever follows the digits is ignored, so
  '8080abc' is 8080; no digits or beyond a C int: exit), a 64-bit one `std::stoll`; a boolean is true/on/1 or
  false/off/0 in any case (`ParseOption<bool>`); `--model-control-mode`, `--rate-limit`, `--trace-level` and gRPC's
  compression level are matched in any case, `--log-format` exactly (`default` or `ISO8601`).
- After parsing: `--load-model` without `--model-control-mode=explicit` throws; so do two enabled endpoints (HTTP,
  gRPC, metrics) on one address and port (`CheckPortCollision`).

What the stack accepts (an allow-list, as for the other servers): flags that restate what KServe's runtime and the
gate assume (HTTP on 0.0.0.0:8080, the model repository /mnt/models, every model in it loaded at start-up and
`/v2/health/ready` answering 200 only once they are: `--strict-readiness` true, metrics on 8002), and flags that
change neither GPU memory nor scheduling (ids, logging, tracing, gRPC's own settings, thread counts, directories).
Refused: what stops start-up (unknown flags, values Triton refuses, positionals, `--load-model` outside explicit
mode), what moves the server off what the probes, the queue-proxy or the autoscaler's metrics use, what loads a
different set of models (`explicit` without a `--load-model`, several models, `poll`, a second repository) or makes
the pod Ready before its model is (`--strict-readiness=false`), and what the simulation does not model: Triton's
CUDA and pinned memory pools, its rate limiter, response cache, backend settings other than the python backend's
(`BACKEND_SETTINGS`) and host policies.
- The simulation serves one model per pod, the service's, which the storage initializer puts in /mnt/models: Triton
  loads it by default (every model of the repository), with `--load-model=*`, or named (`--model-control-mode=
  explicit --load-model=<its directory>`, which loads only it). The stack does not see the repository, so it takes
  the name on trust, as it takes the repository's config.pbtxt; a name not there fails that model's load at
  start-up, as a broken config.pbtxt does.
- The python backend's settings (python_backend `src/python_be.cc` TRITONBACKEND_Initialize, r23.05 to r26.07)
  change neither GPU memory nor scheduling; `shm-default-byte-size` is host shared memory, a region of that size
  in /dev/shm per model instance (`src/shm_manager.cc`: 'Unable to initialize shared memory key … to requested
  size', and the model does not load). The stack's Triton pod mounts nothing at /dev/shm (kserve-tritonserver
  declares no volume; manifests/inference_service.py mounts a memory emptyDir only for a custom predictor), so it
  has the container runtime's 64 MiB (containerd's sandbox /dev/shm, CRI `defaultShmSize`): the region must fit it
  (`POD_SHM_BYTES`) and be no smaller than the backend's minimum (4 MiB to r23.08, 1 MiB from r23.09).

`--exit-on-error` is read and left alone: with the model loading (the stack checks it fits) it changes nothing, and
a model that fails to load leaves the pod un-Ready either way (exit and restart, or a live server whose readiness
never passes).
Flags added after 23.05 are refused on an image older than the release that added them (Triton exits on an
unknown option); without `runtime.image` the pod runs KServe's 23.05 image. Images older than 23.05 are read as
23.05. The values inside `--trace-config` and `--metrics-config` settings are not checked beyond their form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from validation.defaults import MODEL_MOUNT, SERVING_PORT

TRITON = "tritonserver"
MODEL_REPOSITORY = MODEL_MOUNT           # the runtime's --model-store (kserve constants.DefaultModelLocalMountPath)
HTTP_PORT, METRICS_PORT, ANY_ADDRESS = SERVING_PORT, 8002, "0.0.0.0"
KSERVE_RELEASE = (23, 5)                # kserve-tritonserver's image, nvcr.io/nvidia/tritonserver:23.05-py3
HTTP_DEFAULT_MAX_INPUT_SIZE = 1 << 26   # src/common.h: 64 MiB
_SOURCE = "command_line_parser.cc"
_EXITS = "tritonserver exits with its usage and the pod crash-loops"


# --- values, as command_line_parser.cc reads them -------------------------------------------------------------------
_C_INTEGER = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def c_int(text: str, bits: int = 32) -> int:
    """`std::stoi` (bits 32) or `std::stoll` (64): digits after optional spaces and a sign, the rest ignored;
    ValueError where it throws (no digits, out of range)."""
    match = _C_INTEGER.match(text)
    if match is None:
        raise ValueError(text)
    value = int(match.group(1))
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(text)
    return value


def c_bool(text: str) -> bool:
    """`ParseOption<bool>`: true/on/1 or false/off/0, in any case."""
    lowered = text.lower()
    if lowered in ("true", "on", "1"):
        return True
    if lowered in ("false", "off", "0"):
        return False
    raise ValueError(text)


def _int_bool(text: str) -> int:
    """`ParseIntBoolOption` (`--log-verbose`): true → 1, false → 0 in any case, else `std::stoi`."""
    named = {"true": 1, "false": 0}
    return named[text.lower()] if text.lower() in named else c_int(text)


def _one_of(*names: str, any_case: bool = True) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.lower() if any_case else text
        if value not in names:
            raise ValueError(text)
        return value
    return parse


def _ranged(low: int | None = None, high: int | None = None, bits: int = 32) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = c_int(text, bits)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(text)
        return value
    return parse


def _nonempty(text: str) -> str:
    if not text:
        raise ValueError(text)
    return text


def _setting(text: str) -> str:
    """`--metrics-config`: `<setting>=<value>`, both non-empty, no ',' before the '='."""
    name, eq, value = text.partition("=")
    if not eq or not name or not value or "," in name:
        raise ValueError(text)
    return text


def _trace_setting(text: str) -> str:
    """`--trace-config`: `[<mode>,]<setting>=<value>`, the mode `triton` or `opentelemetry` in any case."""
    mode, comma, rest = text.partition(",") if "," in text.partition("=")[0] else ("", "", text)
    if comma and mode.lower() not in ("triton", "opentelemetry"):
        raise ValueError(text)
    return _setting(rest) and text


def _text(text: str) -> str:
    return text


@dataclass(frozen=True)
class TritonFlag:
    """One of tritonserver's options: how its value is read, and what the stack accepts of it."""
    parse: Callable[[str], Any] | None = _text      # None: a switch, which takes no value
    expects: str = "a value"                        # what Triton reads, for a value it refuses
    since: tuple[int, int] | None = None            # the first release that knows it (None: 23.05 or earlier)
    refused: str = ""                               # why the stack refuses it whatever its value
    accepts: Callable[[Any], bool] | None = None    # the values the stack accepts (None: all Triton reads)
    why: str = ""                                   # why another value is refused
    judge: Callable[[Any, Any], str] | None = None  # (value, release) → why the stack refuses it, "" if it does not


_INT, _BOOL = "an integer (std::stoi)", "true, false, on, off, 1 or 0 (any case)"
_I, _B, _S = TritonFlag(c_int, _INT), TritonFlag(c_bool, _BOOL), TritonFlag()
_PORT = TritonFlag(_ranged(0, 65535), "a port, 0 to 65535 (Triton reads any int and then cannot bind another)")
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


# --- --backend-config ---------------------------------------------------------------------------------------------
MIB = 1 << 20
POD_SHM_BYTES = 64 * MIB    # the pod's /dev/shm: containerd's sandbox default (CRI defaultShmSize), nothing mounted
_LOAD_FAILS = ("the python backend refuses it when it starts, so the model does not load and the pod never becomes "
               "Ready (tritonserver exits under --exit-on-error, its default)")


def _backend_setting(text: str) -> tuple[str, str, str]:
    """`ParseBackendConfigOption`: (backend, setting, value) from `<backend>,<setting>=<value>` or `<setting>=<value>`
    (a backend-agnostic one, backend ''): the first ',' ends the backend's name, the first '=' after it the setting's;
    an empty backend, setting or value, or no '=', is a ParseException (tritonserver exits)."""
    comma = text.find(",")
    equals = text.find("=", comma + 1)
    if comma == 0 or equals < 0:
        raise ValueError(text)
    backend, setting, value = text[:max(comma, 0)], text[comma + 1:equals], text[equals + 1:]
    if not setting or not value:
        raise ValueError(text)
    return backend, setting, value


def _long(text: str, low: int, expected: str, setting: str) -> tuple[int | None, str]:
    """`std::stol` of a python backend setting, and why the backend refuses it ("" when it takes it)."""
    try:
        value = c_int(text, 64)
    except ValueError:
        return None, f"expected {expected} for python's {setting} (std::stol): {_LOAD_FAILS}"
    read = f" (std::stol reads {text!r} as {value})" if text.strip().lstrip("+") != str(value) else ""
    return value, "" if value >= low else f"expected {expected} for python's {setting}{read}: {_LOAD_FAILS}"


def _shm_region(text: str, release: tuple[int, int] | None) -> str:
    low = MIB if release is not None and release >= (23, 9) else 4 * MIB
    span = f"an integer from {low} ({low // MIB} MiB) to {POD_SHM_BYTES} ({POD_SHM_BYTES // MIB} MiB)"
    value, why = _long(text, low, span, "shm-default-byte-size")
    if why or value is None:
        return why + ("" if release is None or release >= (23, 9) else
                      f" (its minimum is 4 MiB up to Triton 23.08; the pod runs {_release(release)})")
    if value > POD_SHM_BYTES:
        return (f"expected {span} for python's shm-default-byte-size: the python backend creates a shared-memory "
                "region of that size in /dev/shm for each model instance ('Unable to initialize shared memory key "
                "… to requested size', python_backend shm_manager.cc), and the stack's Triton pod has the container "
                f"runtime's {POD_SHM_BYTES // MIB} MiB /dev/shm (containerd's sandbox default; kserve-tritonserver and "
                "the stack mount no memory emptyDir there), so the model does not load and the pod never becomes "
                "Ready")
    return ""


def _positive(setting: str, low: int = 1) -> Callable[[str, Any], str]:
    return lambda text, release: _long(text, low, f"an integer of at least {low}", setting)[1]


def _region_prefix(text: str, release: Any) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        return ""
    return ("expected letters, digits, '_', '.' or '-' for python's shm-region-prefix-name: it names the /dev/shm "
            "regions (shm_open takes no '/', and python_backend 24.xx+ refuses shell characters: 'Invalid shared "
            "memory region name'), so the model does not load")


# The python backend's settings (python_be.cc TRITONBACKEND_Initialize reads these and ignores any other): host
# shared memory, the stub's start-up timeout, its thread pool and message queue — no GPU memory, no scheduling.
BACKEND_SETTINGS: dict[tuple[str, str], Callable[[str, Any], str]] = {
    ("python", "shm-default-byte-size"): _shm_region,
    ("python", "shm-growth-byte-size"): _positive("shm-growth-byte-size"),
    ("python", "stub-timeout-seconds"): _positive("stub-timeout-seconds"),
    ("python", "thread-pool-size"): _positive("thread-pool-size"),
    ("python", "shm_message_queue_size"): _positive("shm_message_queue_size"),
    ("python", "shm-region-prefix-name"): _region_prefix,
}


def _backend_problem(value: tuple[str, str, str], release: tuple[int, int] | None) -> str:
    """Why the stack refuses a `--backend-config` setting ("" when it takes it): `BACKEND_SETTINGS`, checked as the
    python backend reads them; any other changes what the simulation does not model, or the stack cannot tell."""
    backend, setting, text = value
    if (backend, setting) in BACKEND_SETTINGS:
        return BACKEND_SETTINGS[backend, setting](text, release)
    checked = ", ".join(f"{b},{s}" for b, s in BACKEND_SETTINGS)
    if setting == "default-max-batch-size":
        why = ("it is the max_batch_size Triton's auto-complete gives a model whose config.pbtxt states none (Triton's "
               "model_configuration.md, 'Default Max Batch Size and Dynamic Batcher'), which the simulation does not "
               "model: it batches at limits.maxBatchSize, the config.pbtxt's max_batch_size")
    elif backend == "python":
        why = ("the python backend reads no such setting and ignores it (python_be.cc TRITONBACKEND_Initialize), "
               "so it does not do what it says")
    else:
        why = (f"the stack checks the python backend's settings only, and cannot tell whether "
               f"{backend or 'every backend'}'s {setting} changes GPU memory or batching (tensorflow's "
               "gpu-memory-fraction sizes GPU memory, a backend's default-max-batch-size the batch), which the "
               "simulation does not model; set it in the model's config.pbtxt where it can and declare its caps "
               "under limits")
    return f"expected one of the backend settings the stack checks ({checked}): {why}"


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
    "--model-control-mode": TritonFlag(_one_of("none", "poll", "explicit"), "none, poll or explicit (any case)",
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
    "--metrics-config": TritonFlag(_setting, "<setting>=<value>", accepts=_keeps_latency_counter,
                                   why="expected no counter_latencies=false: " + _SCRAPED),
    "--rate-limit": TritonFlag(_one_of("execution_count", "off"), "execution_count or off (any case)",
                               **_only("off", "off", _RATE_LIMITER)),
    "--http-max-input-size": TritonFlag(_ranged(1, bits=64), "an integer > 0 (std::stoll; Triton: 'must be "
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
    "--backend-config": TritonFlag(_backend_setting, "[<backend>,]<setting>=<value> (ParseBackendConfigOption)",
                                   judge=_backend_problem),
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
    "--model-config-name": TritonFlag(_nonempty, "a non-empty name (Triton: 'empty argument')", since=(24, 5)),
    "--model-namespacing": _B,
    "--enable-peer-access": TritonFlag(c_bool, _BOOL, since=(24, 6)),
    "--allow-client-shm": TritonFlag(c_bool, _BOOL, since=(26, 4)),
    "--model-load-thread-count": _I, "--model-load-retry-count": TritonFlag(c_int, _INT, since=(24, 1)),
    "--repository-poll-secs": _I,       # read only in poll mode (refused above); otherwise Triton sets it to 0
    "--id": _S, "--exit-timeout-secs": _I, "--buffer-manager-thread-count": _I,
    "--backend-directory": _S, "--repoagent-directory": _S, "--cache-directory": _S,
    "--log-verbose": TritonFlag(_int_bool, "true, false or an integer (ParseIntBoolOption)"),
    "--log-info": _B, "--log-warning": _B, "--log-error": _B, "--log-file": _S,
    "--log-format": TritonFlag(_one_of("default", "ISO8601", any_case=False), "default or ISO8601"),
    "--reuse-http-port": _B, "--http-thread-count": _I, "--http-header-forward-pattern": _S,
    "--allow-grpc": _B, "--grpc-port": _PORT, "--grpc-address": _S, "--reuse-grpc-port": _B,
    "--grpc-header-forward-pattern": _S, "--grpc-infer-allocation-pool-size": _I,
    "--grpc-infer-thread-count": TritonFlag(_ranged(2, 128), "an integer from 2 to 128", since=(25, 4)),
    "--grpc-max-response-pool-size": TritonFlag(_ranged(1), "an integer > 0", since=(25, 3)),
    "--grpc-use-ssl": _B, "--grpc-use-ssl-mutual": _B, "--grpc-server-cert": _S, "--grpc-server-key": _S,
    "--grpc-root-cert": _S,
    "--grpc-infer-response-compression-level": TritonFlag(_one_of("none", "low", "medium", "high"),
                                                          "none, low, medium or high (any case)"),
    "--grpc-keepalive-time": _I, "--grpc-keepalive-timeout": _I, "--grpc-keepalive-permit-without-calls": _B,
    "--grpc-http2-max-pings-without-data": _I, "--grpc-http2-min-recv-ping-interval-without-data": _I,
    "--grpc-http2-max-ping-strikes": _I, "--grpc-restricted-protocol": _S,
    "--grpc-max-connection-age": TritonFlag(c_int, _INT, since=(24, 1)),
    "--grpc-max-connection-age-grace": TritonFlag(c_int, _INT, since=(24, 1)),
    "--allow-gpu-metrics": _B, "--allow-cpu-metrics": _B, "--metrics-interval-ms": _I,
    "--trace-config": TritonFlag(_trace_setting, "[triton|opentelemetry,]<setting>=<value>"),
    "--trace-file": _S, "--trace-rate": _I, "--trace-count": _I, "--trace-log-frequency": _I,
    "--trace-level": TritonFlag(_one_of("off", "false", "on", "true", "min", "max", "timestamps", "tensors"),
                                "off, timestamps, tensors (or false, on, true, min, max; any case)"),
}


def release_of(image: str | None) -> tuple[int, int] | None:
    """The Triton release (YY, MM) an image runs: its tag `25.08-py3` → (25, 8); KServe's 23.05 without an image;
    None when the tag names none (a digest alone, `latest`)."""
    if not image:
        return KSERVE_RELEASE
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    match = re.match(r"(\d{2})\.(\d{2})(?:-|$)", tag)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _release(version: tuple[int, int]) -> str:
    return f"{version[0]:02d}.{version[1]:02d}"


def triton_reading(args: list[str] | tuple, image: str | None = None) -> tuple[list[tuple[str, str]],
                                                                                  list[tuple[str, int]]]:
    """(the arg as given, why) for each of `args` Triton refuses or the stack does not accept (module docstring);
    and (the arg as given, its port) for the listener Triton opens beside HTTP and metrics (gRPC, when enabled),
    which the caller holds to the ports the pod already uses (`engine_flag_tables.taken_ports`)."""
    out: list[tuple[str, str]] = []
    given: list[tuple[str, str, Any]] = []          # (name, arg as given, value) of the flags read
    release, args, i = release_of(image), list(args), 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out += [(rest, f"expected no argument after '--': {_positional()}") for rest in args[i:]]
            break
        if not arg.startswith("--"):
            out.append((arg, "expected a --flag" + (": Triton has no short options ('invalid option'), so "
                                                    f"{_EXITS}" if arg.startswith("-") and arg != "-"
                                                    else f": {_positional()}")))
            continue
        name, eq, text = arg.partition("=")
        flag = FLAGS.get(name)
        if flag is None:
            if not eq and i < len(args) and not args[i].startswith("-"):   # its value, if it takes one: one problem
                arg, i = f"{arg} {args[i]}", i + 1
            out.append((arg, _unknown(name)))
            continue
        if flag.parse is None:
            if eq:
                out.append((arg, f"expected {name} alone: it takes no value and getopt_long refuses one "
                                 f"('doesn't allow an argument'), so {_EXITS}"))
            elif flag.refused:
                out.append((arg, f"expected no {name}: {flag.refused}"))
            continue
        if not eq:
            if i >= len(args):
                out.append((arg, f"expected a value after {name}, {flag.expects}: getopt_long refuses the option "
                                 f"without its argument, so {_EXITS}"))
                continue
            text, arg = args[i], f"{arg} {args[i]}"
            i += 1
        if flag.since and (release is None or release < flag.since):
            runs = f"Triton {_release(release)}" if release else f"{image}, which names no Triton release (YY.MM)"
            out.append((arg, f"expected a flag the server knows: {name} first appears in Triton "
                             f"{_release(flag.since)} ({_SOURCE}), and the pod runs {runs}"
                             + (" (KServe's kserve-tritonserver image without runtime.image)" if not image else "")
                             + f"; an older tritonserver does not know it, so {_EXITS}. Name an image of "
                               f"{_release(flag.since)} or later in runtime.image (tagged YY.MM), or drop the flag"))
            continue
        if flag.refused:
            out.append((arg, f"expected no {name}: {flag.refused}"))
            continue
        try:
            value = flag.parse(text)
        except ValueError:
            out.append((arg, f"expected {flag.expects} for {name}: Triton refuses {text!r}, so {_EXITS}"))
            continue
        if flag.judge is not None and (why := flag.judge(value, release)):
            out.append((arg, why))
            continue
        if flag.accepts is not None and not flag.accepts(value) and name in ADDITIVE:
            out.append((arg, flag.why))
            continue
        given.append((name, arg, value))
    last = {name: (arg, value) for name, arg, value in given}   # a setting Triton keeps: the last one given
    out += [(arg, FLAGS[name].why) for name, (arg, value) in last.items()
            if name not in ADDITIVE and FLAGS[name].accepts is not None and not FLAGS[name].accepts(value)]
    given = [(name, arg, value) for name, arg, value in given if name in ADDITIVE or last[name][0] == arg]
    problems, ports = _after_parsing(given)
    return out + problems, ports


# Flags each occurrence of which adds to a list (command_line_parser.cc: the repository paths, the models to load,
# the metrics and trace settings): every one counts. Any other setting is overwritten by a later one (getopt_long's
# loop assigns it again), so only the last is held to what the stack accepts.
ADDITIVE = frozenset({"--model-repository", "--model-store", "--load-model", "--metrics-config", "--trace-config",
                      "--backend-config"})


def _after_parsing(given: list[tuple[str, str, Any]]) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """Checks across flags, on the values Triton keeps: the last of each (KServe's runtime args come first); and
    the gRPC listener's port, when gRPC is on and Triton's own check (`CheckPortCollision`) passes."""
    last = {name: (arg, value) for name, arg, value in given}
    mode_arg, mode = last.get("--model-control-mode", (None, "none"))
    loads = [(arg, value) for name, arg, value in given if name == "--load-model"]
    out = []
    if mode != "explicit":
        out += [(arg, "expected --model-control-mode=explicit with it, or no --load-model: Triton exits at start-up "
                      "('Use of --load-model requires setting --model-control-mode=explicit as well', "
                      f"{_SOURCE} Parse), so the pod crash-loops") for arg, _ in loads]
    elif not loads:
        out.append((mode_arg, "expected --load-model=* or --load-model=<the model's name> with it, or "
                              "--model-control-mode=none (the default): in explicit mode Triton loads only the models "
                              "--load-model names, none without one, and /v2/health/ready still answers 200 (every "
                              "loaded model is ready), so the pod is Ready and every request fails (model not found)"))
    elif "*" in {value for _, value in loads} and len({value for _, value in loads}) > 1:
        out += [(arg, "expected --load-model=* alone, or named models without it: Triton refuses * beside another "
                      "--load-model ('Specifying --load-model=* in conjunction with another --load-model argument "
                      f"will result in error', {_SOURCE}), so it does not start")
                for arg, value in loads if value != "*"]
    else:
        names = list(dict.fromkeys(value for _, value in loads))
        out += [(arg, f"expected one model, {names[0]!r}: Triton loads every model --load-model names onto the "
                      f"GPU ({', '.join(map(repr, names))}), and the simulation serves one model per pod, the "
                      "service's (its memory, batching and start-up)")
                for arg, value in loads if value in names[1:] and arg == next(a for a, v in loads if v == value)]
    grpc_on, ports = last.get("--allow-grpc", (None, True))[1], []
    if "--grpc-port" in last and grpc_on and last["--grpc-port"][1] in (HTTP_PORT, METRICS_PORT):
        arg, port = last["--grpc-port"]
        out.append((arg, f"expected a port other than {HTTP_PORT} (HTTP) and {METRICS_PORT} (metrics), or "
                         f"--allow-grpc=false: Triton refuses two endpoints on one address and port {port} "
                         f"(CheckPortCollision), so {_EXITS}"))
    elif "--grpc-port" in last and grpc_on:
        ports.append(last["--grpc-port"])
    return out, ports


def _positional() -> str:
    return (f"Triton takes no positional argument ('Unexpected argument', {_SOURCE} Parse), so {_EXITS}; give a "
            "value with its flag (--flag=value)")


def _unknown(name: str) -> str:
    stem = name[2:]
    matches = sorted(n for n in FLAGS if n[2:].startswith(stem)) if stem else []
    if matches:
        return (f"expected the flag's full name ({', '.join(matches)}): getopt_long reads an abbreviation as the one "
                "flag it starts (and exits on an ambiguous one), and the stack checks flags by their full name")
    accepted = sorted(n for n, f in FLAGS.items() if not f.refused)
    return (f"expected a flag tritonserver knows that the stack accepts ({', '.join(accepted)}): getopt_long does "
            f"not know {name} ('unrecognized option'), so {_EXITS}")

"""The HTTP GET routes each model server answers 200–399 on, for the kubelet's `httpGet` probes: one table for the
stack's load-time check (stackconfig/services.py) and a scenario's own InferenceService (simulation/isvc.py).

The kubelet counts a probe as passed on a status from 200 to 399 and as failed on anything else, a 404 included
(kubernetes `pkg/probe/http/http.go`); Knative's queue-proxy asks the same path for the revision's readiness
(../shared/reference/knative-kserve.md, "Readiness probing"). A path the server does not route is a 404 on every
probe: a startup or liveness probe there restarts the container every `failureThreshold × periodSeconds`, a
readiness probe keeps the pod out of service, and the revision never becomes Ready (Knative fails it at its
progress deadline; `pulumi up` waits out the InferenceService's timeout).

Each route is a *ready* route (its handler answers 200 only when the server reports itself ready to serve) or a
*live* route (200 whenever the process answers HTTP, whatever the model's state). A readiness or startup probe
belongs on a ready route: a live one can mark Ready a pod whose model cannot serve, and requests are routed to
it. The simulation makes a pod Ready only once its model is loaded (simulation/pod.py), so it has no early
readiness to simulate: a readiness or startup probe on a live route is refused instead.

Routes, read from upstream source (versions the product runs: KServe 0.15–0.20, vLLM 0.8–0.11, TGI 3.3.4, Triton
25.x):
- KServe's Python model server (`kserve` package; huggingfaceserver with the vLLM or Transformers backend):
  `rest/server.py RESTServer._register_endpoints` routes `/` to `DataPlane.live` (always `{"status": "alive"}`)
  and `/metrics`; `rest/v1_endpoints.py register_v1_endpoints` `/v1/models` (the registry's names) and
  `/v1/models/{model_name}` (`V1Endpoints.model_ready`: `DataPlane.model_ready` → the model's `healthy()`, else
  ModelNotReady); `rest/v2_endpoints.py register_v2_endpoints` `/v2` (server metadata), `/v2/health/live`,
  `/v2/health/ready` (the open inference protocol's server-ready), `/v2/models`, `/v2/models/{model_name}`
  (metadata), `/v2/models/{model_name}/ready` (`DataPlane.model_ready`; its `/versions/{v}/ready` form raises
  NotImplementedError, a 500);
  `rest/openai/endpoints.py register_openai_endpoints` `/openai/v1/models` and `/openai/v1/models/{model_name}`
  (`OpenAIEndpoints.health`: ModelNotReady until the model is). Nothing else answers a GET: no `/health`,
  `/healthz`, `/readyz`, `/livez` or `/ping` (docs are off unless `--enable_docs_url`). A model is registered
  under `--model_name` (the runtime's `--model_name={{.Name}}`, the InferenceService's name; KServe's own default
  `model` in a container without it, `model_server.py`), or with the vLLM backend the first
  `--served-model-name` (huggingfaceserver `__main__.py load_model`). `/v2/health/ready` is a live route here:
  on a predictor `DataPlane.ready` returns True without asking any model (`protocol/dataplane.py` `ready`), and
  with the vLLM backend the REST server answers while the model still loads: `VLLMModel.load` only sets
  `engine` (`vllm/vllm_model.py`), `OpenAIModel.__init__` sets `ready = True` (`openai/openai_model.py`), and
  `ModelServer._register_and_check_atleast_one_model_is_ready` appends `model.start_engine()` (which builds the
  engine) to the servers `_serve` runs with `asyncio.gather` beside the REST server (`model_server.py`). The
  routes that ask the model itself are `/v2/models/<name>/ready`, `/v1/models/<name>` (the model's `healthy()`:
  with vLLM the engine's `check_health`, failing until `start_engine` has set `engine_client`) and the OpenAI
  one. The `/openai` prefix is `KSERVE_OPENAI_ROUTE_PREFIX` (`openai/config.py`; empty puts them at `/v1/…`).
- Triton (`src/http_server.cc HTTPAPIServer::Handle`): `/v2`, `/v2/health/live` (`TRITONSERVER_ServerIsLive`),
  `/v2/health/ready` (`TRITONSERVER_ServerIsReady`: every model ready under the default `--strict-readiness`),
  `/v2/models/<name>[/versions/<v>]` with no suffix (metadata), `/ready` (`HandleModelReady`), `/config`,
  `/stats`; `/v2/models/stats`, `/v2/logging`, `/v2/trace/setting`. Metrics are on their own port (8002), not
  the container's 8080. A model's name is its directory in the model repository, which the stack does not see:
  a per-model route is refused there (`/v2/health/ready` covers every model).
- vLLM's OpenAI server (image `vllm/vllm-openai`; `vllm/entrypoints/openai/api_server.py`, later split under
  `entrypoints/serve/`): `/health` (`health`: the engine's `check_health`, 503 or 500 once the engine is dead),
  `/ping` (the same, for SageMaker), `/load`, `/version`, `/v1/models`, `/metrics` (the Prometheus app), and
  FastAPI's `/docs`, `/redoc`, `/openapi.json` unless `--disable-fastapi-docs`. With `--api-key` (or
  `VLLM_API_KEY`) every `/v1` path needs the token (`AuthenticationMiddleware`): a probe there gets 401. The socket
  is bound before the engine starts but served only after (`run_server_worker`), so nothing answers before load.
- TGI's router (text-generation-inference v3.3.4 `router/src/server.rs`, `info_routes`): `/`, `/health` and
  `/ping` (`health`: `Infer::health`, 503 when the shards fail), `/info`, `/metrics`, `/v1/models`, and the
  Swagger UI's `/docs` and `/api-doc/openapi.json`. The `/v2` KServe routes exist only in a router built with the
  `kserve` feature, which the published image is not (`Dockerfile`: `cargo build` with default features). The
  launcher starts the router once every shard is ready (`launcher/src/main.rs`: `spawn_shards`, then
  `spawn_webserver`).

vLLM's server and TGI's router answer nothing before their model is loaded, so on them a readiness or startup
probe may ask any route (`/health` also fails once the engine is dead). KServe's Python server and Triton answer
HTTP while loading: there a readiness or startup probe on a live route is refused. A built-in ServingRuntime named
by `predictor.model.runtime` maps to its server (`RUNTIME_SERVERS`, kserve `config/runtimes`); a runtime of the
user's own is not checked.

A route's query string is ignored (the routers match the path). On the FastAPI servers (KServe's Python server,
vLLM's) a trailing slash is accepted: Starlette's router (`redirect_slashes`, FastAPI's default) answers `/route/`
with a 307 to `/route`, and the kubelet counts 200–399 as a pass. Under vLLM's `--root-path P` both `P/route` and
`/route` are routed: `build_app` sets `app.root_path`, `FastAPI.__call__` puts it in the scope's `root_path`, and
Starlette's `get_route_path` (`_utils.py`) strips it from a path that starts with `P/` and leaves any other path
as it is. Other spellings are refused.
"""

from __future__ import annotations

import re
from typing import Any

from simulation.engine_flags import image_repository

KSERVE_PYTHON, TRITON, VLLM_OPENAI, TGI = "kserve-python", "tritonserver", "vllm-openai", "text-generation-inference"
LABELS = {KSERVE_PYTHON: "KServe's Python model server (huggingfaceserver)", TRITON: "Triton",
          VLLM_OPENAI: "vLLM's OpenAI server", TGI: "TGI's router"}
READY, LIVE = "ready", "live"
MODEL, VERSION = "<model>", "<version>"

ROUTES: dict[str, dict[str, str]] = {
    KSERVE_PYTHON: {
        f"/v2/models/{MODEL}/ready": READY, f"/v1/models/{MODEL}": READY, f"/openai/v1/models/{MODEL}": READY,
        "/v2/health/ready": LIVE, "/": LIVE, "/v2/health/live": LIVE, "/metrics": LIVE, "/v1/models": LIVE,
        "/v2": LIVE, "/v2/models": LIVE,
        f"/v2/models/{MODEL}": LIVE, "/openai/v1/models": LIVE,
    },
    TRITON: {
        "/v2/health/ready": READY, f"/v2/models/{MODEL}/ready": READY,
        f"/v2/models/{MODEL}/versions/{VERSION}/ready": READY,
        "/v2/health/live": LIVE, "/v2": LIVE, f"/v2/models/{MODEL}": LIVE, f"/v2/models/{MODEL}/config": LIVE,
        f"/v2/models/{MODEL}/stats": LIVE, "/v2/models/stats": LIVE, "/v2/logging": LIVE, "/v2/trace/setting": LIVE,
    },
    VLLM_OPENAI: {
        "/health": READY, "/ping": READY,
        "/load": LIVE, "/version": LIVE, "/v1/models": LIVE, "/metrics": LIVE, "/docs": LIVE, "/redoc": LIVE,
        "/openapi.json": LIVE,
    },
    TGI: {
        "/health": READY, "/": READY, "/ping": READY,
        "/info": LIVE, "/metrics": LIVE, "/v1/models": LIVE, "/docs": LIVE, "/api-doc/openapi.json": LIVE,
    },
}
# The KServe Python servers' images (the last path component, as engine_flags.image_repository reads it).
KSERVE_PYTHON_IMAGES = ("huggingfaceserver", "sklearnserver", "xgbserver", "lgbserver", "pmmlserver", "paddleserver")
SERVER_IMAGES = {"vllm-openai": VLLM_OPENAI, "text-generation-inference": TGI, "tritonserver": TRITON,
                 **dict.fromkeys(KSERVE_PYTHON_IMAGES, KSERVE_PYTHON)}
# The formats KServe auto-selects one of these servers for (stackconfig/runtimes.py MODEL_FORMATS); any other
# format runs a server not in the table, whose probes are not checked.
FORMAT_SERVERS = {"huggingface": KSERVE_PYTHON, "triton": TRITON, "onnx": TRITON, "tensorrt": TRITON}
KSERVE_DEFAULT_MODEL_NAME = "model"   # kserve model_server.py: --model_name's default
# KServe's built-in ServingRuntimes (kserve config/runtimes/*.yaml `metadata.name`) whose server is in the table;
# kserve-vllmserver runs `python -m vllm.entrypoints.openai.api_server`. A `predictor.model.runtime` naming any
# other runtime (a user's own ServingRuntime, or a built-in one not in the table) runs a server the table does
# not know: its probes are not checked.
RUNTIME_SERVERS = {"kserve-huggingfaceserver": KSERVE_PYTHON, "kserve-huggingfaceserver-multinode": KSERVE_PYTHON,
                   "kserve-sklearnserver": KSERVE_PYTHON, "kserve-xgbserver": KSERVE_PYTHON,
                   "kserve-lgbserver": KSERVE_PYTHON, "kserve-pmmlserver": KSERVE_PYTHON,
                   "kserve-paddleserver": KSERVE_PYTHON, "kserve-tritonserver": TRITON,
                   "kserve-vllmserver": VLLM_OPENAI}
# Servers that answer no HTTP before their model is loaded (vLLM's OpenAI server serves its socket only after the
# engine is built; TGI's launcher starts the router once every shard is ready): any route they serve passes only
# once the model is loaded, so a readiness or startup probe may ask any of them.
SERVED_AFTER_LOAD = (VLLM_OPENAI, TGI)
# FastAPI servers: Starlette's router (`redirect_slashes`, on by default) answers an unrouted `/route/` with a 307
# to `/route`, which the kubelet counts as a pass and follows.
REDIRECT_SLASHES = (KSERVE_PYTHON, VLLM_OPENAI)


def server_for(engine: str, image: str | None) -> str:
    """The server a stack's service runs (stackconfig/runtimes.py): TGI, vLLM's own image, Triton, else KServe's
    huggingfaceserver."""
    if engine == "tgi":
        return TGI
    if engine == "triton":
        return TRITON
    if engine == "vllm" and image and image_repository(image) == "vllm-openai":
        return VLLM_OPENAI
    return KSERVE_PYTHON


def manifest_server(engine: Any, image: Any, model_format: Any, runtime: Any = None) -> str | None:
    """The server an InferenceService's container runs: the stack's engine annotation, else the image, else the
    ServingRuntime `runtime` names (`RUNTIME_SERVERS`; None for one not there, a user's own), else the
    auto-selected runtime of `modelFormat` (KServe picks by format only when `runtime` is absent); None when it is
    none of the table's."""
    image = image if isinstance(image, str) and image else None
    if engine in ("vllm", "naive", "tgi", "triton"):
        return server_for(engine, image)
    if image is not None:
        return SERVER_IMAGES.get(image_repository(image))
    if isinstance(runtime, str) and runtime:
        return RUNTIME_SERVERS.get(runtime)
    return FORMAT_SERVERS.get(model_format) if isinstance(model_format, str) else None


def _last_value(args: list[str], flag: str) -> tuple[bool, str | None]:
    """(given, the value of the last `flag` in `args`): `--flag=value` or `--flag value` (argparse keeps the last;
    with nargs '+' the first value of it is the one huggingfaceserver uses)."""
    given, value = False, None
    for i, arg in enumerate(args):
        if arg == flag:
            given, value = True, args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else None
        elif arg.startswith(flag + "="):
            given, value = True, arg.split("=", 1)[1]
    return given, value


def kserve_model_name(default: str, args: Any) -> str:
    """The name KServe's Python server registers the model under: the first `--served-model-name` (vLLM backend),
    else the last `--model_name`, else `default` (the runtime's `--model_name={{.Name}}`)."""
    args = [str(a) for a in args] if isinstance(args, (list, tuple)) else []
    for flag in ("--served-model-name", "--model_name"):
        given, value = _last_value(args, flag)
        if given and value:
            return value
    return default


def _api_key(args: Any, env: Any) -> bool:
    args = [str(a) for a in args] if isinstance(args, (list, tuple)) else []
    return _last_value(args, "--api-key")[0] or bool(isinstance(env, dict) and env.get("VLLM_API_KEY"))


def openai_prefix(env: Any) -> str:
    """KServe's OpenAI routes' prefix: `KSERVE_OPENAI_ROUTE_PREFIX` (default `/openai`; a non-empty value without
    a leading `/` gets one), kserve `protocol/rest/openai/config.py`, used as the `APIRouter` prefix in
    `endpoints.py register_openai_endpoints`."""
    value = env.get("KSERVE_OPENAI_ROUTE_PREFIX", "/openai") if isinstance(env, dict) else "/openai"
    value = "" if value is None else str(value)
    return value if not value or value.startswith("/") else "/" + value


def routes(server: str, args: Any = (), env: Any = None) -> dict[str, str]:
    """The server's routes (path pattern → READY or LIVE) as this pod serves them: KServe's `/openai` routes
    under `KSERVE_OPENAI_ROUTE_PREFIX`; vLLM's `/v1` paths dropped under an API key, and FastAPI's docs routes
    under `--disable-fastapi-docs` (`build_app`: `FastAPI(openapi_url=None, docs_url=None, redoc_url=None)`)."""
    table = dict(ROUTES[server])
    flat = [str(a) for a in args] if isinstance(args, (list, tuple)) else []
    if server == KSERVE_PYTHON:
        prefix = openai_prefix(env)
        moved = {prefix + p[len("/openai"):]: k for p, k in table.items() if p.startswith("/openai/")}
        table = {p: k for p, k in table.items() if not p.startswith("/openai/")}
        table.update({p: k for p, k in moved.items() if p not in table})
    if server == VLLM_OPENAI and _api_key(args, env):
        table = {p: k for p, k in table.items() if not p.startswith("/v1/")}
    if server == VLLM_OPENAI and _last_value(flat, "--disable-fastapi-docs")[0]:
        table = {p: k for p, k in table.items() if p not in ("/docs", "/redoc", "/openapi.json")}
    return table


def _pattern(template: str) -> re.Pattern:
    out = re.escape(template).replace(re.escape(MODEL), "(?P<model>[^/]+)")
    return re.compile(out.replace(re.escape(VERSION), "[0-9]+") + r"\Z")


def _shown(template: str, model_name: str | None) -> str:
    return template.replace(MODEL, model_name) if model_name else template


def probe_problem(server: str, probe: str, path: Any, model_name: str | None, args: Any = (),
                  env: Any = None) -> str | None:
    """Why a `probe` ('startup', 'readiness' or 'liveness') on `path` fails on `server`, or None. `model_name`: the
    name the server registers the model under, None where the stack cannot know it (Triton)."""
    if not isinstance(path, str):
        return None   # the caller reports a wrong type
    table, label = routes(server, args, env), LABELS[server]
    wants_ready = probe in ("startup", "readiness") and server not in SERVED_AFTER_LOAD
    allowed = [_shown(t, model_name) for t, kind in table.items()
               if (kind == READY or not wants_ready) and (MODEL not in t or model_name) and VERSION not in t]
    listing = ", ".join(allowed)
    bare = path.split("?", 1)[0]
    root = _last_value([str(a) for a in args] if isinstance(args, (list, tuple)) else [], "--root-path")[1]
    if server == VLLM_OPENAI and root and bare.startswith(root + "/"):
        bare = bare[len(root):]   # FastAPI sets scope root_path; Starlette's get_route_path strips it
    if server in REDIRECT_SLASHES:
        bare = bare.rstrip("/") or "/"
    for template, kind in table.items():
        hit = _pattern(template).match(bare)
        if hit is None:
            continue
        named = hit.groupdict().get("model")
        if named is not None and model_name is None:
            return (f"expected a path {label} answers 200 on ({listing}): it names a model after its directory in "
                    "the model repository, which the stack cannot check; /v2/health/ready is Ready once every model "
                    "is (Triton's --strict-readiness default), while a wrong name is never Ready")
        if named is not None and named != model_name:
            return (f"expected a path {label} answers 200 on ({listing}): it registers this model as "
                    f"'{model_name}', not '{named}', so it answers {path} with 404 (ModelNotFound) and the pod never "
                    "becomes Ready")
        if kind == LIVE and wants_ready:
            return (f"expected a path {label} answers 200 on only when the model is ready ({listing}): {path} is a "
                    "liveness route (200 whenever the process answers HTTP, whatever the model's state), so a "
                    f"{probe} probe there can mark Ready a pod that cannot serve, and requests are routed to it")
        return None
    if server in (VLLM_OPENAI, TGI) and bare.startswith("/v2"):
        why = "it has no KServe v2 routes"
    elif server == VLLM_OPENAI and bare.startswith("/v1/") and _api_key(args, env):
        why = "it answers 401 on /v1 paths without the API key (--api-key)"
    else:
        why = "the server answers 404 on it (no such route)"
    consequence = {"startup": "the startup probe restarts the container until the revision misses its progress "
                              "deadline, and the pod never becomes Ready",
                   "readiness": "the readiness probe never passes, and the pod never becomes Ready",
                   "liveness": "the liveness probe restarts the container every failureThreshold × periodSeconds, "
                               "and the pod never stays Ready"}.get(probe, "the probe never passes")
    return f"expected a path {label} answers 200 on ({listing}): {why}, so {consequence}"


def manifest_probe_problems(container: Any, isvc_name: str, engine: Any) -> list[tuple[str, Any, str]]:
    """(`<probe>.httpGet.path`, the path, why) for each httpGet probe of an InferenceService's serving container
    the server would fail (`probe_problem`); exec, tcpSocket and grpc probes are not checked, nor a server outside
    the table."""
    if not isinstance(container, dict):
        return []
    model_format = container.get("modelFormat")
    model_format = model_format.get("name") if isinstance(model_format, dict) else None
    server = manifest_server(engine, container.get("image"), model_format, container.get("runtime"))
    if server is None:
        return []
    args = container.get("args") if isinstance(container.get("args"), list) else []
    env_list = container.get("env") if isinstance(container.get("env"), list) else []
    env = {str(e.get("name")): e.get("value") for e in env_list if isinstance(e, dict)}
    runtime_default = isvc_name if "modelFormat" in container else KSERVE_DEFAULT_MODEL_NAME
    model_name = kserve_model_name(runtime_default, args) if server == KSERVE_PYTHON else None
    out = []
    for key, probe in (("startupProbe", "startup"), ("readinessProbe", "readiness"), ("livenessProbe", "liveness")):
        spec = container.get(key)
        get = spec.get("httpGet") if isinstance(spec, dict) else None
        if not isinstance(get, dict):
            continue
        path = get.get("path", "/") or "/"   # the kubelet asks "/" when the path is empty
        why = probe_problem(server, probe, path, model_name, args, env)
        if why:
            out.append((f"{key}.httpGet.path", path, why))
    return out

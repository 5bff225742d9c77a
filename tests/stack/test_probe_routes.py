"""A probe path is held to the routes the server that runs answers (simulation/probe_routes.py): the field guides'
`/healthz`, `/readyz` and `/livez` (001 §4-1, §9; 004 §2) are 404s on KServe's huggingfaceserver, so the revision
would never become Ready (reviewer rev11-guides F1). Sources: kserve `protocol/rest/server.py`,
`v1_endpoints.py`, `v2_endpoints.py`; vllm `entrypoints/openai/api_server.py`; TGI v3.3.4 `router/src/server.rs`;
Triton `src/http_server.cc`."""

from __future__ import annotations


import pytest

from manifests.inference_service import inference_service
from runtime_stack import chat_stack, refused, with_service
from stackconfig.runtimes import health_paths
from stackconfig.schema import parse_stack_config
from simulation.probe_routes import (KSERVE_PYTHON, LIVE, MODEL, READY, ROUTES, kserve_model_name, probe_problem,
                                     server_for)

BASE = chat_stack(limits={"maxInputTokens": 4096, "maxNewTokens": 1024, "maxBatchSize": 16})
VLLM_OPENAI = {"engine": "vllm", "image": "vllm/vllm-openai:v0.11.0"}
GUIDE_PROBES = {"startup": {"path": "/healthz", "periodSeconds": 10, "failureThreshold": 60},
                "readiness": {"path": "/readyz"}, "liveness": {"path": "/livez"}}


def _cfg(runtime: dict | None = None, **svc) -> dict:
    return with_service(BASE, runtime, **svc)


def _rendered_paths(cfg: dict) -> dict:
    stack = parse_stack_config(cfg, "p", "dev")
    pred = inference_service(stack, stack.services[0])["spec"]["predictor"]
    container = pred.get("model") or pred["containers"][0]
    return {k: container[k]["httpGet"]["path"] for k in ("startupProbe", "readinessProbe", "livenessProbe")}


def test_the_guides_probe_paths_are_refused_on_huggingfaceserver():
    msg = refused(_cfg(probes=GUIDE_PROBES))
    for key, path in (("startup", "/healthz"), ("readiness", "/readyz"), ("liveness", "/livez")):
        assert f"services[0].probes.{key}.path: got '{path}'; expected a path KServe's Python model server" in msg
    assert msg.count("the server answers 404 on it") == 3
    assert "(/v2/models/chat/ready, /v1/models/chat, /openai/v1/models/chat)" in msg
    assert "never becomes Ready" in msg


@pytest.mark.parametrize("key", ["startup", "readiness"])
def test_ping_is_no_kserve_route(key):
    msg = refused(_cfg(probes={key: {"path": "/ping"}}))
    assert f"probes.{key}.path: got '/ping'" in msg and "404" in msg
    assert _rendered_paths(_cfg(VLLM_OPENAI, probes={key: {"path": "/ping"}}))[f"{key}Probe"] == "/ping"  # vLLM's


@pytest.mark.parametrize("path", ["/v2/models/chat/ready", "/v1/models/chat", "/openai/v1/models/chat"])
def test_a_ready_route_of_the_registered_model_is_accepted(path):
    paths = _rendered_paths(_cfg(probes={"startup": {"path": path}, "readiness": {"path": path}}))
    assert paths["startupProbe"] == paths["readinessProbe"] == path


def test_a_model_route_with_another_name_is_refused():
    msg = refused(_cfg(probes={"readiness": {"path": "/v2/models/llama-3-8b/ready"}}))
    assert "probes.readiness.path: got '/v2/models/llama-3-8b/ready'" in msg
    assert "registers this model as 'chat', not 'llama-3-8b'" in msg and "404 (ModelNotFound)" in msg


def test_served_model_name_renames_the_registered_model():
    """huggingfaceserver's vLLM backend registers the first --served-model-name (`__main__.py load_model`)."""
    runtime = {"engine": "vllm", "args": ["--served-model-name=llama"]}
    assert _rendered_paths(_cfg(runtime, probes={"readiness": {"path": "/v2/models/llama/ready"}}))[
        "readinessProbe"] == "/v2/models/llama/ready"
    assert "registers this model as 'llama', not 'chat'" in refused(
        _cfg(runtime, probes={"readiness": {"path": "/v2/models/chat/ready"}}))
    assert kserve_model_name("chat", ["--model_name=a", "--model_name", "b"]) == "b"


@pytest.mark.parametrize("path", ["/", "/v2/health/live", "/metrics", "/v1/models", "/v2/health/ready"])
@pytest.mark.parametrize("key", ["startup", "readiness"])
def test_a_liveness_route_is_refused_for_readiness_and_startup(key, path):
    msg = refused(_cfg(probes={key: {"path": path}}))
    assert f"probes.{key}.path: got '{path}'" in msg and "is a liveness route" in msg
    assert "requests are routed to it" in msg
    assert _rendered_paths(_cfg(probes={"liveness": {"path": path}}))["livenessProbe"] == path   # fine for liveness


def test_vllm_openai_health_is_accepted_for_every_probe():
    probes = {k: {"path": "/health"} for k in ("startup", "readiness", "liveness")}
    assert set(_rendered_paths(_cfg(VLLM_OPENAI, probes=probes)).values()) == {"/health"}
    # under an API key every /v1 path answers 401 (AuthenticationMiddleware)
    keyed = {**VLLM_OPENAI, "args": ["--api-key=s3cret"]}
    assert "401" in refused(_cfg(keyed, probes={"liveness": {"path": "/v1/models"}}))


def test_tgi_routes():
    assert _rendered_paths(_cfg({"engine": "tgi"}, probes={"readiness": {"path": "/"}}))["readinessProbe"] == "/"
    assert "no KServe v2 routes" in refused(_cfg({"engine": "tgi"}, probes={"liveness": {"path": "/v2/health/live"}}))


def _triton(**svc) -> dict:
    cfg = _cfg({"engine": "triton"}, model={"name": "resnet-50", "storageUri": "hf://m/r", "public": True},
               limits={"maxBatchSize": 8}, **svc)
    cfg["services"][0].pop("workload")
    return cfg


def test_triton_model_routes_need_a_name_the_stack_cannot_check():
    msg = refused(_triton(probes={"readiness": {"path": "/v2/models/resnet-50/ready"}}))
    assert "the stack cannot check" in msg and "(/v2/health/ready)" in msg
    assert _rendered_paths(_triton(probes={"startup": {"path": "/v2/health/ready"}}))["startupProbe"] == \
        "/v2/health/ready"


@pytest.mark.parametrize("engine, image", [("vllm", None), ("naive", None), ("triton", None), ("tgi", None),
                                           ("vllm", "vllm/vllm-openai:v0.11.0")])
def test_the_default_paths_are_routes_of_their_server(engine, image):
    """The defaults (runtimes.health_paths) agree with the table: a ready route for readiness and startup, any
    route for liveness."""
    server = server_for(engine, image)
    ready, live = health_paths(engine, image, "chat" if server == KSERVE_PYTHON else None)
    assert probe_problem(server, "readiness", ready, "chat" if server == KSERVE_PYTHON else None) is None
    table = ROUTES[server]
    assert table[ready.replace("/chat/", f"/{MODEL}/")] == READY and table[live] in (READY, LIVE)


def test_the_default_readiness_asks_the_model_on_kserve():
    """rev11-diff F7: KServe's `/v2/health/ready` (`DataPlane.ready`) is True on a predictor without asking any
    model, and with huggingfaceserver's vLLM backend the REST server runs beside `start_engine` (kserve
    `model_server.py` `_register_and_check_atleast_one_model_is_ready`, `_serve`): 200 before the model is loaded.
    The default readiness and startup path is the model's own `/v2/models/<name>/ready`."""
    assert _rendered_paths(_cfg()) == {"startupProbe": "/v2/models/chat/ready",
                                       "readinessProbe": "/v2/models/chat/ready",
                                       "livenessProbe": "/v2/health/live"}
    llama = _rendered_paths(_cfg({"engine": "vllm", "args": ["--served-model-name=llama"]}))
    assert llama["readinessProbe"] == llama["startupProbe"] == "/v2/models/llama/ready"
    assert "is a liveness route" in refused(_cfg(probes={"readiness": {"path": "/v2/health/ready"}}))
    assert _rendered_paths(_cfg(probes={"liveness": {"path": "/v2/health/ready"}}))["livenessProbe"] == \
        "/v2/health/ready"


@pytest.mark.parametrize("runtime, path", [(VLLM_OPENAI, "/v1/models"), (VLLM_OPENAI, "/version"),
                                           (VLLM_OPENAI, "/metrics"), ({"engine": "tgi"}, "/info"),
                                           ({"engine": "tgi"}, "/v1/models")])
@pytest.mark.parametrize("key", ["startup", "readiness"])
def test_servers_that_answer_only_after_load_take_any_route_for_readiness(runtime, path, key):
    """rev11-diff F2: vLLM's OpenAI server serves its socket only after the engine is built, TGI's launcher starts
    the router once every shard is ready: no route answers before the model is loaded."""
    assert _rendered_paths(_cfg(runtime, probes={key: {"path": path}}))[f"{key}Probe"] == path


def test_kserve_openai_route_prefix_moves_the_openai_routes():
    """rev11-diff F5a: kserve `protocol/rest/openai/config.py` reads `KSERVE_OPENAI_ROUTE_PREFIX` (default
    `/openai`), `endpoints.py` uses it as the APIRouter prefix."""
    empty = {"env": {"KSERVE_OPENAI_ROUTE_PREFIX": ""}}
    assert "404" in refused(_cfg(empty, probes={"readiness": {"path": "/openai/v1/models/chat"}}))
    assert _rendered_paths(_cfg(empty, probes={"readiness": {"path": "/v1/models/chat"}}))["readinessProbe"] == \
        "/v1/models/chat"
    moved = {"env": {"KSERVE_OPENAI_ROUTE_PREFIX": "llm"}}    # a leading "/" is added
    assert _rendered_paths(_cfg(moved, probes={"readiness": {"path": "/llm/v1/models/chat"}}))["readinessProbe"] == \
        "/llm/v1/models/chat"
    assert "404" in refused(_cfg(moved, probes={"readiness": {"path": "/openai/v1/models/chat"}}))


def test_disable_fastapi_docs_drops_vllms_docs_routes():
    """rev11-diff F5b: vLLM `build_app` creates FastAPI with openapi_url, docs_url and redoc_url None under
    `--disable-fastapi-docs`."""
    off = {**VLLM_OPENAI, "args": ["--disable-fastapi-docs"]}
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert "404" in refused(_cfg(off, probes={"liveness": {"path": path}}))
        assert _rendered_paths(_cfg(VLLM_OPENAI, probes={"liveness": {"path": path}}))["livenessProbe"] == path


@pytest.mark.parametrize("runtime, path", [(VLLM_OPENAI, "/health/"), (None, "/v2/models/chat/ready/"),
                                           (None, "/v1/models/chat/")])
def test_a_trailing_slash_redirects_on_fastapi_servers(runtime, path):
    """rev11-diff F6: Starlette's router (`redirect_slashes`, FastAPI's default) answers `/route/` with a 307 to
    `/route`; the kubelet counts 200-399 as a pass."""
    assert _rendered_paths(_cfg(runtime, probes={"readiness": {"path": path}}))["readinessProbe"] == path


def test_a_trailing_slash_is_still_a_404_on_tgi_and_triton():
    assert "404" in refused(_cfg({"engine": "tgi"}, probes={"readiness": {"path": "/health/"}}))
    assert "404" in refused(_triton(probes={"readiness": {"path": "/v2/health/ready/"}}))


def test_vllm_root_path_routes_both_spellings():
    """rev11-diff F6: vLLM `build_app` sets `app.root_path = args.root_path`; FastAPI puts it in the scope and
    Starlette's `get_route_path` strips it from a path under it, leaving other paths as they are."""
    rooted = {**VLLM_OPENAI, "args": ["--root-path", "/llm"]}
    for path in ("/llm/health", "/health", "/llm/health/"):
        assert _rendered_paths(_cfg(rooted, probes={"readiness": {"path": path}}))["readinessProbe"] == path
    assert "404" in refused(_cfg(rooted, probes={"readiness": {"path": "/llmhealth"}}))
    assert "404" in refused(_cfg(VLLM_OPENAI, probes={"readiness": {"path": "/llm/health"}}))

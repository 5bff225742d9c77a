"""The model cache's capacity (manifests/model_cache.py: capacity_problems): every cached model must fit the PVC."""

from __future__ import annotations

from dataclasses import replace

from manifests.admission import check_pods_can_run
from manifests.model_cache import capacity_problems, cached_models
from program_refusal import refusal
from stackconfig.load import load_stack

P = "kserve-preflight"


def test_a_cache_smaller_than_its_models_is_refused_before_any_resource(registered):
    """prod caches llama-3-8b and mistral-7b from hf://, whole repositories (catalog repo_gib): 30.0 + 27.1 GiB."""
    def edit(c):
        c[f"{P}:modelCache"]["sizeGib"] = 20

    message = refusal("prod", edit, registered)
    assert "modelCache.sizeGib: got 20; expected at least 58 GiB" in message, message
    assert "llama-3-8b 30.0 GiB: whole hf:// repository, 15.0 GiB of weights" in message
    assert "no space left on device" in message and "repoGib" in message


def test_the_boundary_and_the_switches():
    cfg = load_stack("prod")
    need = sum(s.model.download_gib(s.storage_uri) for s in cfg.services)
    assert len(cached_models(cfg)) == len(cfg.services) == 2
    fits = replace(cfg, model_cache=replace(cfg.model_cache, size_gib=int(need) + 1))
    short = replace(cfg, model_cache=replace(cfg.model_cache, size_gib=int(need)))
    assert capacity_problems(fits) == [] and len(capacity_problems(short)) == 1
    off = replace(short, model_cache=replace(short.model_cache, enabled=False))
    assert capacity_problems(off) == []   # nothing is cached: the root-volume check covers the downloads
    check_pods_can_run(cfg)


def test_a_model_shared_by_two_services_is_held_once():
    cfg = load_stack("prod")
    chat = cfg.services[0]
    twin = replace(cfg, services=(chat, replace(chat, name="chat-b")))
    one = chat.model.download_gib(chat.storage_uri)
    assert capacity_problems(replace(twin, model_cache=replace(twin.model_cache, size_gib=int(one) + 1))) == []

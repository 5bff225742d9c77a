"""An hf:// model downloads its whole Hugging Face repository (kserve `_download_hf`: `snapshot_download` without
allow_patterns), so a repository that ships the weights twice takes twice the weights on the cache volume, in the
prefetch's fill time and in a cold start's download; an s3:// (gs://, pvc://) source keeps the weights size.
`catalog.Model.repo_gib` (stack: `catalog: models: <name>: repoGib`) states the repository."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from catalog import DEFAULT, GIB
from manifests.model_cache import capacity_problems, fill_timeout_s
from manifests.node_disk import root_disk_problems
from manifests.rollout import cold_start
from program_refusal import refusal
from stackconfig.load import load_stack, project_values, stack_config_values
from stackconfig.platform import expected_load_s, slow_rate
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"
LLAMA = "hf://meta-llama/Meta-Llama-3-8B-Instruct"


def _s3(cfg):
    """The same stack with every model read from an s3:// copy of its weights."""
    return replace(cfg, services=[replace(s, storage_uri=f"s3://models/{s.model.name}/") for s in cfg.services])


def _cache(cfg, **changes):
    return replace(cfg, model_cache=replace(cfg.model_cache, **changes))


def test_the_built_in_repositories_that_ship_the_weights_twice():
    """The catalog's repo_gib (sources in catalog/__init__.py): about twice the weights where verified, for hf://
    only; a model without one downloads its weights."""
    for name, repo in (("llama-3-8b", 30.0), ("llama-3.1-8b", 30.0), ("mistral-7b", 27.1),
                       ("mistral-7b-v0.3", 27.1), ("llama-3.1-70b", 263.0)):
        model = DEFAULT.models[name]
        assert model.download_bytes("hf://org/repo:abc") == int(repo * GIB)
        assert 1.9 < repo / model.weights_gib < 2.1, name
        for uri in ("s3://b/m/", "gs://b/m", "pvc://claim/m", "https://host/m.tar.gz"):
            assert model.download_bytes(uri) == model.weights_bytes
    qwen = DEFAULT.models["qwen2.5-7b"]
    assert qwen.repo_gib == 0 and qwen.download_bytes("hf://Qwen/Qwen2.5-7B-Instruct") == qwen.weights_bytes


def test_a_cache_sized_for_the_weights_but_not_the_repositories_is_refused():
    """prod's two hf:// models: 28.5 GiB of weights, 57.1 GiB of repositories. A 29 GiB cache held the weights
    (the old check passed it) but not what the prefetch writes; an s3:// copy of the weights fits."""
    cfg = load_stack("prod")
    weights = sum(s.model.weights_gib for s in cfg.services)
    assert weights < 29
    [problem] = capacity_problems(_cache(cfg, size_gib=29))
    assert "expected at least 58 GiB" in problem.allowed and "whole hf:// repository" in problem.allowed
    assert "s3://" in problem.allowed and "repoGib" in problem.allowed
    assert capacity_problems(_cache(cfg, size_gib=58)) == []
    assert capacity_problems(_cache(_s3(cfg), size_gib=29)) == []
    [short] = capacity_problems(_cache(_s3(cfg), size_gib=28))
    assert "expected at least 29 GiB" in short.allowed and "hf://" not in short.allowed


def test_the_program_refuses_it_before_any_resource(registered):
    def edit(c):
        c[f"{P}:modelCache"]["sizeGib"] = 29

    message = refusal("prod", edit, registered)
    assert "modelCache.sizeGib: got 29; expected at least 58 GiB" in message, message


def test_the_fill_timeout_grows_with_the_repository_for_hf_only():
    """Pulumi's wait for the prefetch DaemonSet: twice the download at the slow rate, so an hf:// repository of
    twice the weights adds twice its second copy; an s3:// source's timeout does not depend on repo_gib."""
    cfg = load_stack("prod")
    cold, mc = cfg.cold_start, cfg.model_cache
    rate = min(slow_rate(cold.download_gbps) * 1e9, mc.throughput_mib_s * 2**20)
    extra = sum(s.model.download_bytes(s.storage_uri) - s.model.weights_bytes for s in cfg.services)
    assert extra > 25 * GIB
    assert fill_timeout_s(cfg) - fill_timeout_s(_s3(cfg)) == pytest.approx(2 * extra / rate, abs=1)

    bigger = replace(cfg, services=[replace(s, model=replace(s.model, repo_gib=2 * s.model.repo_gib))
                                    for s in cfg.services])
    assert fill_timeout_s(bigger) > fill_timeout_s(cfg)
    assert fill_timeout_s(_s3(bigger)) == fill_timeout_s(_s3(cfg))


def test_the_cold_start_download_is_the_repository_for_hf_only():
    """expected_load_s (probes, the rollout's deadline): the download phase is the repository for hf://, the load
    phase stays the weights (the server reads one copy); a cache hit downloads nothing either way."""
    model, cold = DEFAULT.models["llama-3-8b"], load_stack("dev").cold_start
    hf = expected_load_s(model, cold, cache_hit=False, storage_uri=LLAMA)
    s3 = expected_load_s(model, cold, cache_hit=False, storage_uri="s3://models/llama-3-8b/")
    assert hf - s3 == pytest.approx((model.repo_gib - model.weights_gib) * GIB / 1e9 / slow_rate(cold.download_gbps))
    assert s3 == pytest.approx(expected_load_s(model, cold, cache_hit=False))   # the weights, as before
    assert expected_load_s(model, cold, cache_hit=True, storage_uri=LLAMA) == \
        pytest.approx(expected_load_s(model, cold, cache_hit=True, storage_uri="s3://models/llama-3-8b/"))


def test_without_the_cache_the_rollout_and_the_root_volume_count_the_repository():
    cfg = _cache(load_stack("prod"), enabled=False)
    for hf, s3 in zip(cfg.services, _s3(cfg).services):
        assert cold_start(cfg, hf).load_s > cold_start(cfg, s3).load_s
    # 197 GiB holds 3 × llama-3-8b + 1 × mistral-7b repositories (see test_node_disk); their weights need 132
    small = replace(cfg, node_group=replace(cfg.node_group, disk_size_gib=150))
    assert root_disk_problems(_s3(small)) == []
    [problem] = root_disk_problems(small)
    assert "expected at least 197 GiB" in problem.allowed and "whole hf:// repository" in problem.allowed


def _parse(edit):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    edit(values)
    return parse_stack_config(values, project, "dev")


def _llama(**keys):
    return {"models": {"llama-3-8b": {"paramsB": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128,
                                      "maxContext": 8192, "hiddenSize": 4096, "vocabSize": 128256,
                                      "intermediateSize": 14336, **keys}}}


def test_a_stack_states_its_repository_with_repoGib():
    """A repository without the second copy (a mirror of just the safetensors) sets repoGib to its size: the cache,
    the fill timeout and the simulated scenario use it. A user entry replaces the built-in one whole, so without
    repoGib it downloads its weights."""
    from gate import scenario_for
    from simulation import load_scenario

    cfg = _parse(lambda v: v.update(catalog=_llama(repoGib=15.5)))
    svc = cfg.services[0]
    assert svc.model.repo_gib == 15.5 and svc.model.download_gib(svc.storage_uri) == 15.5
    plain = _parse(lambda v: v.update(catalog=_llama()))
    assert plain.services[0].model.download_gib(svc.storage_uri) == plain.services[0].model.weights_gib
    assert fill_timeout_s(plain) < fill_timeout_s(cfg) < fill_timeout_s(load_stack("dev"))
    scenario = scenario_for(cfg, svc)
    assert scenario["model"]["download_gib"] == 15.5
    assert load_scenario(scenario).model.download == 15.5   # the simulation's catalog takes the custom entry
    assert "download_gib" not in scenario_for(plain, plain.services[0])["model"]


@pytest.mark.parametrize("value", [-1, 1_000_001, "big"])
def test_repoGib_is_bounded(value):
    with pytest.raises(InputError) as err:
        _parse(lambda v: v.update(catalog=_llama(repoGib=value)))
    assert [p.allowed for p in err.value.problems if p.path.endswith("catalog.models.llama-3-8b.repoGib")] == \
        ["expected a number between 0 and 1000000"], err.value.problems


def test_the_shipped_stacks_hold_their_repositories():
    """prod's 1000 GiB holds its 57.1 GiB of repositories many revisions over; dev's 100 and staging's 300 too."""
    for stack in ("dev", "staging", "prod"):
        cfg = load_stack(stack)
        need = sum({s.storage_uri: s.model.download_gib(s.storage_uri) for s in cfg.services}.values())
        assert capacity_problems(cfg) == [] and math.ceil(need) <= cfg.model_cache.size_gib

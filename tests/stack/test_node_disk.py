"""The root-volume check (manifests/node_disk.py): without the model cache every pod downloads its model onto the
node's root volume, so what can land on one node must fit `gpuNodeGroup.diskSizeGib`."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manifests.admission import check_pods_can_run
from manifests.node_disk import IMAGE_UNPACK_FACTOR, SYSTEM_GIB, root_disk_problems, worst_mix
from program_refusal import refusal
from stackconfig.load import load_stack
from validation.errors import InputError

P = "kserve-preflight"


def _no_cache(cfg, **node_group):
    return replace(cfg, model_cache=replace(cfg.model_cache, enabled=False),
                   node_group=replace(cfg.node_group, **node_group))


def test_cache_off_on_a_small_root_volume_is_refused_before_any_resource(registered):
    """The reviewer's repro: prod without the cache on 50 GiB; a g6e.12xlarge (4 GPUs) holds 3 chat + 1 code."""
    def edit(c):
        c[f"{P}:modelCache"]["enabled"] = False
        c[f"{P}:gpuNodeGroup"]["diskSizeGib"] = 50

    message = refusal("prod", edit, registered)
    # each pod downloads its whole hf:// repository (catalog repo_gib): 3 × 30.0 + 27.1 GiB, 2 images at 20, 20
    assert "gpuNodeGroup.diskSizeGib: got 50; expected at least 197 GiB" in message, message
    assert ("3 × chat (llama-3-8b, 30.0 GiB each: its whole hf:// repository, 15.0 GiB of weights), "
            "1 × code (mistral-7b, 27.1 GiB each") in message
    assert "modelCache.enabled is false" in message and "coldStart.imageGib" in message
    assert "so 50 GiB holds 45 GiB" in message


def test_the_shipped_stacks_fit_with_and_without_the_cache():
    for stack in ("dev", "staging", "prod"):
        cfg = load_stack(stack)
        check_pods_can_run(cfg)
        assert root_disk_problems(_no_cache(cfg)) == []


def test_the_worst_mix_is_the_heaviest_the_gpus_hold():
    """prod's g6e.12xlarge: 4 GPUs. Weights alone would pick 4 × chat (the larger model); with each service's image
    counted once, 3 × chat + 1 × code takes more."""
    cfg = _no_cache(load_stack("prod"))
    chat, code = (s.model.download_gib(s.storage_uri) for s in cfg.services)
    image = IMAGE_UNPACK_FACTOR * cfg.cold_start.image_gib
    mix = worst_mix(cfg)
    assert mix.pods == ((0, 3), (1, 1))
    assert mix.gib == pytest.approx(3 * chat + code + 2 * image)
    assert mix.gib > 4 * chat + image


def test_a_service_counts_at_most_twice_its_max_replicas():
    """A rollout runs a new revision beside the old one; more pods of a service than that never share a node."""
    cfg = _no_cache(load_stack("prod"))
    one = replace(cfg, services=[replace(cfg.services[0], max_replicas=1)])
    assert worst_mix(one).pods == ((0, 2),)


def test_cached_models_take_no_root_volume():
    cfg = load_stack("prod")
    assert worst_mix(cfg).gib == 2 * IMAGE_UNPACK_FACTOR * cfg.cold_start.image_gib


def test_a_bigger_model_needs_a_bigger_disk():
    """Just below and at the boundary: the minimum the message names passes."""
    cfg = _no_cache(load_stack("dev"), disk_size_gib=50)
    [problem] = root_disk_problems(cfg)
    svc = cfg.services[0]
    need = SYSTEM_GIB + svc.model.download_gib(svc.storage_uri) + IMAGE_UNPACK_FACTOR * cfg.cold_start.image_gib
    minimum = int(problem.allowed.split("at least ")[1].split(" GiB")[0])
    assert minimum * 0.9 >= need > (minimum - 1) * 0.9
    assert root_disk_problems(replace(cfg, node_group=replace(cfg.node_group, disk_size_gib=minimum))) == []
    with pytest.raises(InputError, match="gpuNodeGroup.diskSizeGib"):
        check_pods_can_run(cfg)


_PROD = load_stack("prod")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpus=st.sampled_from([1, 2, 4, 8]),
       services=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 5), st.floats(0.5, 200)),
                         min_size=1, max_size=4))
def test_the_knapsack_finds_the_brute_force_worst_mix(gpus, services):
    """Every count of every service within the node's GPUs and 2 × maxReplicas, enumerated: none takes more."""
    base = _PROD.services[0]
    svcs = [replace(base, name=f"s{i}", gpus=g, max_replicas=m,
                    model=replace(base.model, weights_gib_override=w, repo_gib=0.0))   # downloads its weights
            for i, (g, m, w) in enumerate(services)]
    cfg = _no_cache(replace(_PROD, services=svcs), gpus_per_node=gpus)
    image = IMAGE_UNPACK_FACTOR * cfg.cold_start.image_gib
    best = 0.0
    for counts in itertools.product(*(range(min(gpus // g, 2 * m) + 1) for g, m, _ in services)):
        if sum(k * g for k, (g, _, _) in zip(counts, services)) <= gpus:
            best = max(best, sum(k * svc.model.weights_gib + (image if k else 0) for k, svc in zip(counts, svcs)))
    mix = worst_mix(cfg)
    assert mix.gib == pytest.approx(best)
    assert sum(k * svcs[i].gpus for i, k in mix.pods) <= gpus

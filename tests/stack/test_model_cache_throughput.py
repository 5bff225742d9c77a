"""`modelCache.throughputMode` / `fsThroughputMiBps`: the pods that start together read their weights from one
file system and share its read throughput (stackconfig/platform.py `load_gbps`, `cache_read_mib_s`). Elastic, the
default and the documented prerequisite, leaves the shipped stacks' figures as they were; an EFS file system
bursting (the CreateFileSystem API's default: 100 MiB/s metered, 300 MiB/s of reads) makes prod chat's 10-pod
rollout miss its progress deadline, and the check says why."""

from __future__ import annotations

import pytest

from gate import cluster_profile
from gate.rollout_capacity import rollout_problems
from manifests.model_cache import fill_timeout_s
from manifests.rollout import cold_start, first_pods
from stackconfig.load import project_values, stack_config_values
from stackconfig.platform import expected_load_s, load_gbps, slow_s
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"


def _cfg(stack: str, **cache):
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    values.setdefault("modelCache", {}).update(cache)
    return parse_stack_config(values, project, stack)


def _refused(stack: str, **cache) -> str:
    with pytest.raises(InputError) as err:
        _cfg(stack, **cache)
    return str(err.value)


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_elastic_is_the_default_and_changes_no_shipped_figure(stack):
    cfg = _cfg(stack)
    mc = cfg.model_cache
    assert (mc.throughput_mode, mc.throughput_mib_s, mc.fs_throughput_mib_s) == ("elastic", 1500.0, None)
    for svc in cfg.services:
        # Elastic reads 10 GiB/s: a rollout's first pods at 1,500 MiB/s each (at most 10) stay within it at the
        # quantile their cold start is taken at, so each loads as if alone.
        one = expected_load_s(svc.model, cfg.cold_start, True, load_gbps(cfg.cold_start, mc),
                              cold_start(cfg, svc).pod_level, storage_uri=svc.storage_uri)
        assert cold_start(cfg, svc).load_s == one and not cold_start(cfg, svc).shared
    assert cluster_profile(cfg)["load_total_gib_s"] == 10.0


def test_prod_chat_on_a_bursting_file_system_misses_its_progress_deadline():
    elastic, bursting = _cfg("prod"), _cfg("prod", throughputMode="bursting")
    chat = bursting.services[0]
    assert first_pods(bursting, chat) == 10
    assert bursting.model_cache.fs_throughput_mib_s == 100 and bursting.model_cache.throughput_mib_s == 500
    cs = cold_start(bursting, chat)
    # Ten pods share 300 MiB/s of reads: 30 MiB/s each, ten times one pod alone on that file system.
    weights_s = cs.load_s - slow_s(bursting.cold_start.engine_init_s, cs.pod_level)
    assert weights_s == pytest.approx(chat.model.weights_gib * 1024 / 30)
    assert cold_start(elastic, elastic.services[0]).total_s <= 600 < cs.total_s
    [problem] = [p for p in rollout_problems(bursting) if p.path.startswith("services[0]")]
    assert "10 pods share the model cache's 300 MiB/s of reads: modelCache.throughputMode bursting" in problem.allowed
    assert "modelCache.throughputMode elastic" in problem.allowed
    assert rollout_problems(elastic) == []


def test_the_simulation_gets_the_file_systems_read_throughput():
    assert cluster_profile(_cfg("prod", throughputMode="bursting"))["load_total_gib_s"] == pytest.approx(300 / 1024)
    provisioned = _cfg("prod", throughputMode="provisioned", fsThroughputMiBps=256)
    assert cluster_profile(provisioned)["load_total_gib_s"] == pytest.approx(768 / 1024)
    assert "load_total_gib_s" not in cluster_profile(_cfg("prod", enabled=False))


def test_the_startup_probe_is_sized_for_the_shared_load():
    """The default startup budget is twice the first pods' load when they share the file system; sized for one
    pod alone the kubelet would kill every pod mid-load, again and again."""
    cfg = _cfg("prod", throughputMode="bursting")
    chat, cold, mc = cfg.services[0], cfg.cold_start, cfg.model_cache
    probe = chat.startup_probe
    budget = probe.initial_delay_s + probe.period_s * (probe.failure_threshold - 1)
    alone, shared = (expected_load_s(chat.model, cold, True, load_gbps(cold, mc, n), storage_uri=chat.storage_uri)
                     for n in (1, 11))   # chat's 10 first pods and code's 1 at the first `pulumi up`
    assert shared > 5 * alone
    assert budget >= 2 * shared - probe.period_s


def test_a_stated_startup_probe_shorter_than_the_shared_load_is_refused():
    project, values = stack_config_values("prod")
    values = project_values(values, project)
    values["modelCache"] = {**values.get("modelCache", {}), "throughputMode": "bursting"}
    values["services"][0]["probes"] = {"startup": {"periodSeconds": 10, "failureThreshold": 30}}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, "prod")
    assert "11 pods load at once at the first `pulumi up` and share the model cache's 300 MiB/s of reads" in \
        str(err.value)


def test_the_prefetch_wait_counts_the_file_systems_write_throughput():
    elastic, bursting = _cfg("prod"), _cfg("prod", throughputMode="bursting")
    assert fill_timeout_s(bursting) > fill_timeout_s(elastic)
    cached = {s.storage_uri: s for s in bursting.services}.values()
    gib = sum(s.model.download_gib(s.storage_uri) for s in cached)
    assert fill_timeout_s(bursting) >= 2 * gib * 1024 / 100   # twice the downloads at 100 MiB/s of writes


@pytest.mark.parametrize("cache, key, words", [
    ({"throughputMode": "burst"}, "throughputMode", "expected one of 'elastic', 'provisioned', 'bursting'"),
    ({"throughputMode": "provisioned"}, "fsThroughputMiBps", "ProvisionedThroughputInMibps"),
    ({"fsThroughputMiBps": 500}, "fsThroughputMiBps", "expected none with throughputMode elastic"),
    ({"throughputMode": "bursting", "throughputMiBps": 1500}, "throughputMiBps", "expected at most 500"),
    ({"throughputMode": "provisioned", "fsThroughputMiBps": 0}, "fsThroughputMiBps", "expected a number"),
])
def test_mistakes_are_refused_naming_the_key(cache, key, words):
    message = _refused("prod", **cache)
    assert f"{P}:modelCache.{key}" in message and words in message, message


def test_a_bigger_bursting_file_system_states_its_burst_rate():
    small = _cfg("prod", throughputMode="bursting")
    big = _cfg("prod", throughputMode="bursting", fsThroughputMiBps=400)   # 4 TiB stored: 400 MiB/s burst
    assert cold_start(big, big.services[0]).load_s < cold_start(small, small.services[0]).load_s


def test_elastic_reads_are_taken_at_the_lowest_regional_quota():
    """EFS quotas, "Total default Elastic throughput per file system": "All other AWS Regions" read 10 GiB/s
    (60 in the listed Regions), the row whose 1 GiB/s of writes the prefetch's wait already takes. Eight pods at
    1,500 MiB/s (11.7 GiB/s) then share it: 1,280 MiB/s each."""
    mc = _cfg("prod").model_cache
    cold = _cfg("prod").cold_start
    assert load_gbps(cold, mc, 8).cap == pytest.approx(10 * 1024 / 8 * 2**20 / 1e9)
    assert load_gbps(cold, mc, 6).cap == pytest.approx(1500 * 2**20 / 1e9)   # 8.8 GiB/s: within it


def _two_bursting_services(chat_min: int, code_min: int):
    project, values = stack_config_values("prod")
    values = project_values(values, project)
    values["modelCache"] = {**values.get("modelCache", {}), "throughputMode": "bursting"}
    for svc, n in zip(values["services"], (chat_min, code_min)):
        svc["minReplicas"] = n
        svc.setdefault("annotations", {})["autoscaling.knative.dev/initial-scale"] = str(n)
    return project, values


def test_at_the_first_deploy_every_services_first_pods_share_the_reads():
    """All InferenceServices are created at once after the prefetch DaemonSet is Ready, so at the first
    `pulumi up` code's one pod loads beside chat's four: the startup probe and Pulumi's wait are sized for five
    readers, a rollout of code alone (its progress deadline) for one."""
    from manifests.rollout import ready_timeout_s
    from stackconfig.services import readers_together
    project, values = _two_bursting_services(4, 1)
    cfg = parse_stack_config(values, project, "prod")
    chat, code = cfg.services
    cold, mc = cfg.cold_start, cfg.model_cache
    assert [readers_together(cfg.services, s, cfg.knative.autoscaler.initial_scale) for s in (chat, code)] == [5, 5]
    assert readers_together(cfg.services, code, cfg.knative.autoscaler.initial_scale, first_deploy=False) == 1
    five = expected_load_s(code.model, cold, True, load_gbps(cold, mc, 5), storage_uri=code.storage_uri)
    assert code.expected_load_s == round(five, 1)
    probe = code.startup_probe
    assert probe.period_s * (probe.failure_threshold - 1) >= five
    assert cold_start(cfg, code, first_deploy=True).load_s > 2 * cold_start(cfg, code).load_s
    assert ready_timeout_s(cfg, code) >= 2 * cold_start(cfg, code, first_deploy=True).total_s


def test_a_startup_probe_that_fits_a_rollout_but_not_the_first_deploy_is_refused():
    project, values = _two_bursting_services(4, 1)
    cfg = parse_stack_config(values, project, "prod")
    code, cold, mc = cfg.services[1], cfg.cold_start, cfg.model_cache
    alone = expected_load_s(code.model, cold, True, load_gbps(cold, mc, 1), storage_uri=code.storage_uri)
    failures = int(alone / 10) + 3   # 10 s periods: fits one pod's load, not five's
    values["services"][1]["probes"] = {"startup": {"periodSeconds": 10, "failureThreshold": failures}}
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, "prod")
    assert "services[1].probes.startup" in str(err.value)
    assert "5 pods load at once at the first `pulumi up`" in str(err.value)

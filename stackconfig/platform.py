"""Platform add-ons and priors: the NVIDIA device plugin, the model cache, cold-start priors and the gate's settings."""

from __future__ import annotations

import math
import re
from dataclasses import replace

from catalog import Model
from stackconfig.formats import DNS_LABEL, DNS_SUBDOMAIN, check_image, check_k8s_name
from stackconfig.model_credentials import S3_CREDENTIALS, check_one_account, check_s3_credentials
from stackconfig.stress import judged_in, scenario_settings
from stackconfig.types import (PROJECT_ROOT, ClusterConfig, ColdStartProfile, DevicePluginConfig, GateConfig,
                               ModelCacheConfig, ServiceConfig)
from validation.annotations import INITIAL_SCALE
from validation.errors import Problem
from validation.fields import Section
from simulation.analytic import zero_event_trials
from simulation.budget import DEFAULT_REQUEST_BUDGET, expected_requests
from stackconfig.gate_runs import DEFAULT_MAX_REPLICATIONS, DEFAULT_TOTAL_REQUEST_BUDGET, MAX_TOTAL_REQUEST_BUDGET
from simulation.dists import RATE_KINDS, Dist, parse_dist
from simulation.estimates import lowest_rate_upper, passable_rate_limit
from simulation.workload import parse_workload


def parse_device_plugin(sec: Section) -> DevicePluginConfig:
    """The default pin is the release NVIDIA/k8s-device-plugin's own static manifest deploys
    (deployments/static/nvidia-device-plugin.yml on main: v0.18.0)."""
    out = DevicePluginConfig(image=sec.str("image", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"),
                             namespace=sec.str("namespace", "kube-system"), enabled=sec.bool("enabled", True))
    check_image(sec, "image", out.image)
    check_k8s_name(sec, "namespace", out.namespace, DNS_LABEL, "namespace name")
    sec.done()
    return out


def parse_model_cache(sec: Section, namespace: str) -> ModelCacheConfig:
    out = ModelCacheConfig(
        enabled=sec.bool("enabled", True),
        namespace=sec.str("namespace", namespace),
        pvc_name=sec.str("pvcName", "model-cache"),
        storage_class=sec.str("storageClass", "efs-sc"),
        size_gib=sec.int("sizeGib", 500, min=1, max=65536),
        access_mode=sec.choice("accessMode", ACCESS_MODES, "ReadWriteMany"),
        prefetch_image=sec.str("prefetchImage", "kserve/storage-initializer:v0.15.2"),
        image_pull_secrets=tuple(sec.str_list("imagePullSecrets", [])),
        service_account=sec.str("serviceAccountName"),
        credentials_secret=sec.str("credentialsSecret"),
        s3_credentials=sec.choice("s3Credentials", S3_CREDENTIALS, S3_CREDENTIALS[0]),
    )
    out = _parse_throughput(sec, out)
    for key, value in (("serviceAccountName", out.service_account), ("credentialsSecret", out.credentials_secret)):
        check_k8s_name(sec, key, value, DNS_SUBDOMAIN, "object name")
    check_image(sec, "prefetchImage", out.prefetch_image)
    for i, secret in enumerate(out.image_pull_secrets):  # the prefetch pod's imagePullSecrets: Secret names
        check_k8s_name(sec, f"imagePullSecrets[{i}]", secret, DNS_SUBDOMAIN, "Secret name")
    check_k8s_name(sec, "storageClass", out.storage_class, DNS_SUBDOMAIN, "StorageClass name")
    if sec.has("namespace"):  # the default is cluster.namespace, checked there
        check_k8s_name(sec, "namespace", out.namespace, DNS_LABEL, "namespace name")
    check_k8s_name(sec, "pvcName", out.pvc_name, DNS_SUBDOMAIN, "object name")
    check_one_account(sec, out)
    check_s3_credentials(sec, out)
    if out.enabled:
        _check_shared_storage(sec, out)
    sec.done()
    return out


ACCESS_MODES = ["ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"]

# Amazon EFS throughput (EFS User Guide, "Amazon EFS performance specifications" and "Throughput modes"): each
# client reads and writes at most 1,500 MiB/s on Elastic, 500 MiB/s on Provisioned and Bursting. The file system
# as a whole: Elastic reads 10–60 GiB/s and writes 1–5 GiB/s depending on the Region (EFS User Guide, "Amazon EFS
# quotas", "Total default Elastic throughput per file system": 60 GiB/s of reads and 5 of writes in the listed
# Regions, "All other AWS Regions" 10 GiB/s and 1 GiB/s; earlier editions of that table said 3 GiB/s of reads
# there): the lowest current row is taken here, for reads and writes alike;
# Provisioned drives the ProvisionedThroughputInMibps it was given; Bursting drives 100 MiB/s while it has burst
# credits when it stores under 1 TiB (100 MiB/s per TiB stored above), its baseline of 50 KiB/s per GiB stored once
# they are spent. Provisioned and Bursting meter a read at one third of its bytes (AWS Storage Blog, "Amazon EFS
# introduces 3X read-throughput increase", 2021): a file system of T metered MiB/s reads 3 T MiB/s. Bursting is the
# CreateFileSystem API's default (so of a file system Pulumi, Terraform or the CLI creates without saying); the
# stack's prerequisite is Elastic (the console's default and AWS's recommendation: EFS User Guide, "Managing file
# system throughput"), which gives the shipped stacks' figures. Simplification: the per-client limit is applied per
# pod, where EFS applies it per NFS client (a node): pods loading on one node at once are taken to read up to
# (pods on the node) × the limit together (docs/deploying.md §5).
THROUGHPUT_MODES = ("elastic", "provisioned", "bursting")
PER_CLIENT_MIB_S = {"elastic": 1500.0, "provisioned": 500.0, "bursting": 500.0}
ELASTIC_READ_MIB_S, ELASTIC_WRITE_MIB_S = 10 * 1024.0, 1024.0
BURST_MIB_S = 100.0   # Bursting's burst rate for a file system storing under 1 TiB
READ_METERING = 3.0   # Provisioned and Bursting: a MiB read counts as a third


def _parse_throughput(sec: Section, mc: ModelCacheConfig) -> ModelCacheConfig:
    """`throughputMode` (elastic, the default and the documented prerequisite; provisioned; bursting),
    `throughputMiBps` (per client; default and maximum the mode's EFS per-client limit for provisioned and
    bursting) and `fsThroughputMiBps` (the file system's metered throughput: required for provisioned, default
    100 for bursting, refused for elastic, which EFS scales itself). Simplification: Bursting's burst credits are
    not modelled — the stated figure holds through every load (state the baseline, 50 KiB/s per GiB stored, for a
    file system whose credits are spent)."""
    mode = sec.choice("throughputMode", list(THROUGHPUT_MODES), THROUGHPUT_MODES[0]) or THROUGHPUT_MODES[0]
    limit = PER_CLIENT_MIB_S[mode]
    per_client = sec.float("throughputMiBps", limit, min=1, max=100000)
    fs = sec.float("fsThroughputMiBps", None, min=1, max=100000)
    if mode != "elastic" and per_client is not None and per_client > limit:
        sec.problem("throughputMiBps", per_client, f"expected at most {limit:g} with throughputMode {mode}: "
                    f"an EFS client reads and writes at most {limit:g} MiB/s in {mode} mode (EFS performance "
                    "specifications); or throughputMode elastic (1,500 MiB/s per client)")
    if mode == "elastic" and fs is not None:
        sec.problem("fsThroughputMiBps", fs, "expected none with throughputMode elastic: EFS scales an Elastic file "
                    f"system's throughput itself (reads {ELASTIC_READ_MIB_S / 1024:g}–60 GiB/s by Region, the "
                    f"lowest assumed); state the file system's throughput with throughputMode provisioned or bursting")
    if mode == "provisioned" and fs is None:
        sec.problem("fsThroughputMiBps", None, "expected the file system's provisioned throughput in MiB/s "
                    "(its ProvisionedThroughputInMibps) with throughputMode provisioned: every pod loading from the "
                    "cache at once shares it")
    if mode == "bursting" and fs is None:
        fs = BURST_MIB_S
    return replace(mc, throughput_mode=mode, throughput_mib_s=per_client if per_client is not None else limit,
                   fs_throughput_mib_s=None if mode == "elastic" else fs)


def cache_read_mib_s(mc: ModelCacheConfig) -> float:
    """MiB/s the cache's file system reads for all its clients together (module note above THROUGHPUT_MODES)."""
    if mc.throughput_mode == "elastic" or mc.fs_throughput_mib_s is None:
        return ELASTIC_READ_MIB_S
    return READ_METERING * mc.fs_throughput_mib_s


def cache_write_mib_s(mc: ModelCacheConfig) -> float:
    """MiB/s the cache's file system writes for all its clients together (the prefetch's downloads)."""
    if mc.throughput_mode == "elastic" or mc.fs_throughput_mib_s is None:
        return ELASTIC_WRITE_MIB_S
    return mc.fs_throughput_mib_s


# StorageClass names of Amazon EBS volumes: EKS's own `gp2` class, the aws-ebs-csi-driver volume types (its
# `type` parameter) and names with an `ebs` part ("ebs-sc", "gp3-ebs").
_EBS_CLASS = re.compile(r"^(gp2|gp3|io1|io2|st1|sc1)([.-]|$)|(^|[.-])ebs([.-]|$)")


def _check_shared_storage(sec: Section, mc: ModelCacheConfig) -> None:
    """The cache is one volume shared by many nodes: the prefetch DaemonSet mounts it read-write on every Linux
    node (a non-GPU node and the GPU nodes at least) and every predictor mounts it, so only ReadWriteMany works.
    ReadWriteOnce(Pod) binds it to one node (pods elsewhere stay ContainerCreating: "Multi-Attach error");
    ReadOnlyMany mounts it read-only, so the prefetch could never write a model. An EBS StorageClass cannot give
    ReadWriteMany to a file system at all (EBS volumes attach to one node in one zone; io1/io2 Multi-Attach serves
    raw block volumes only, kubernetes-sigs/aws-ebs-csi-driver docs), so a class named like one is refused too;
    a class of any other name is taken to be what the README asks for (EFS CSI, or FSx for Lustre)."""
    why = ("the prefetch DaemonSet writes the cache on every Linux node and every predictor mounts it, so the "
           "volume must be writable from many nodes at once")
    if mc.access_mode != "ReadWriteMany":
        effect = ("it could not write a single model" if mc.access_mode == "ReadOnlyMany" else
                  "it attaches to one node and pods on every other node stay ContainerCreating (Multi-Attach error)")
        sec.problem("accessMode", mc.access_mode, f"expected ReadWriteMany: {why}; with {mc.access_mode} {effect}. "
                    "Or set modelCache.enabled: false")
    elif _EBS_CLASS.search(mc.storage_class):
        sec.problem("storageClass", mc.storage_class, f"expected a StorageClass of shared file storage for "
                    f"ReadWriteMany, such as the EFS CSI driver's (default efs-sc) or FSx for Lustre: "
                    f"{mc.storage_class!r} is named like an Amazon EBS class, and an EBS volume attaches to one node "
                    f"in one zone (no ReadWriteMany file system), while {why}")


# The coldStart priors' defaults, where a real cluster varies (reference knative-kserve.md §6 "Suggested model",
# from the vendor measurements tabled there): a new GPU node 60–180 s, an image pulled at 20–100 MB/s, weights
# downloaded at 0.5–2 GB/s, engine init 10–60 s for an 8B model — each uniform over the range (the means are the
# old fixed defaults 120 s and 60 MB/s). Weights → GPU: median 2 GB/s with the shape of Alibaba GenTD26's
# model-load latencies (p90/p50 1.85, p99/p50 2.28; gpu-memory-and-models.md): lognormal sigma 0.4.
COLD_START_DEFAULTS = {
    "nodeProvisionS": Dist("uniform", 60.0, 180.0),
    "imagePullMBps": Dist("uniform", 20.0, 100.0),
    "downloadGBps": Dist("uniform", 0.5, 2.0),
    "loadGBps": Dist("lognormal", 2.0, 0.4),
    "engineInitS": Dist("uniform", 10.0, 60.0),
}
# With the model cache off, KServe's storage initializer downloads the weights in each predictor pod, an init
# container under the inferenceservice-config `storageInitializer` limits (cpuLimit "1", memoryLimit "1Gi" in
# config/configmap/inferenceservice.yaml, v0.15.2 through v0.20.0), which the stack does not manage (it patches
# only the `inferenceService` key: manifests/kserve_config.py). KServe's one published measurement of that path
# (v0.15.2 docs/samples/fluid/README.md, "KServe + Storage Initializer": Meta-Llama-3.1-8B-Instruct, 15 GB,
# g5.8xlarge, S3 in-region, scale from 0 with the node and image ready) takes 265 s against 50 s with the weights
# already local, so the download is about 215 s: 0.07 GB/s, 7–30× below the 0.5–2 GB/s above. The cache-off
# default is therefore uniform over half to twice that rate (the same 4:1 spread around its centre as the
# general default). No published source ties the rate to the init container's CPU or memory, so it does not
# depend on them. A stated `downloadGBps` applies to whichever path downloads.
STORAGE_INITIALIZER_GBPS = Dist("uniform", 0.035, 0.14)
# What the static checks size from (probes, Pulumi's waits, the rollout's progress deadline): every phase at its
# 95th percentile (a throughput at its 5th). The sum is the 95th percentile of a cold start whose phases are
# slow together (one congested network slows the pull and the download alike), and above it when independent.
COLD_START_QUANTILE = 0.95


# Bounds of what a prior can mean: a phase of a day or an image of 4 TiB is a typo (and their sums overflowed
# Pulumi's integer timeouts); the throughputs' ceilings are far above any NIC or PCIe link.
MAX_PHASE_S, MAX_IMAGE_GIB = 86400.0, 4096.0


def parse_cold_start(sec: Section, cache_enabled: bool = True) -> ColdStartProfile:
    """Each prior a number (fixed) or a distribution (simulation/dists.py); imageGib is a size the registry
    states exactly, so a number. `downloadGBps` defaults to the cache prefetch's prior with the model cache on
    and to KServe's storage initializer's (`STORAGE_INITIALIZER_GBPS`) with it off."""
    d = COLD_START_DEFAULTS if cache_enabled else COLD_START_DEFAULTS | {"downloadGBps": STORAGE_INITIALIZER_GBPS}

    def rate(key: str, minimum: float, maximum: float, unit: str) -> Dist:
        return parse_dist(sec, key, d[key], minimum=minimum, maximum=maximum, unit=unit, kinds=RATE_KINDS)

    out = ColdStartProfile(
        node_provision_s=parse_dist(sec, "nodeProvisionS", d["nodeProvisionS"], maximum=MAX_PHASE_S),
        image_gib=sec.float("imageGib", 10.0, min=0, max=MAX_IMAGE_GIB),
        image_pull_mbps=rate("imagePullMBps", 1, 1e6, "MB/s"),
        download_gbps=rate("downloadGBps", 0.01, 1e3, "GB/s"),
        load_gbps=rate("loadGBps", 0.01, 1e3, "GB/s"),
        engine_init_s=parse_dist(sec, "engineInitS", d["engineInitS"], maximum=MAX_PHASE_S),
    )
    sec.done()
    return out


def slow_s(duration: Dist, level: float = COLD_START_QUANTILE) -> float:
    """A duration prior at its `level` quantile (default COLD_START_QUANTILE)."""
    return duration.quantile(level)


def slow_rate(rate: Dist, level: float = COLD_START_QUANTILE) -> float:
    """A throughput prior at its 1 − `level` quantile (the slow end)."""
    return rate.quantile(1 - level)


def load_gbps(cold: ColdStartProfile, cache: ModelCacheConfig, readers: int = 1) -> Dist:
    """GB/s weights reach the GPU: the `loadGBps` prior, capped when the model is read from the cache's PVC by the
    storage's per-client throughput and by an equal share of the file system's read throughput among `readers`
    pods loading at once (`cache_read_mib_s`; the simulation shares it the same way: simulation/shared_reads.py)."""
    if not cache.enabled:
        return cold.load_gbps
    per_pod = min(cache.throughput_mib_s, cache_read_mib_s(cache) / max(1, readers))
    cap, rate = per_pod * 2**20 / 1e9, cold.load_gbps
    if rate.kind == "fixed":
        return Dist("fixed", min(rate.a, cap))
    return replace(rate, cap=cap if rate.cap is None else min(rate.cap, cap))


def initial_scale(min_replicas: int, annotations: dict, cluster_default: int = 1) -> int:
    """Pods a new Knative revision starts with: max(min-scale, initial-scale (default: the cluster's
    config-autoscaler initial-scale, 1 unless knative.autoscaler says otherwise))."""
    try:
        initial = int(float(annotations.get(INITIAL_SCALE, cluster_default)))
    except ValueError:
        initial = cluster_default
    return max(min_replicas, initial)


def first_pods(mode: str, min_replicas: int, annotations: dict, cluster_default: int = 1) -> int:
    """Pods that start together and must all be Ready: a Knative revision's initial scale, a Deployment's
    minReplicas (at least 1). They load their weights at once: `load_gbps(..., readers=first_pods(...))`."""
    if mode == "Knative":
        return max(1, initial_scale(min_replicas, annotations, cluster_default))
    return max(1, min_replicas)


def expected_load_s(model: Model, cold: ColdStartProfile, cache_hit: bool, load_rate_gbps: Dist | None = None,
                    level: float = COLD_START_QUANTILE, storage_uri: str = "") -> float:
    """Container start → model ready, each phase at its `level` quantile (default COLD_START_QUANTILE): download
    (skipped on a cache hit; what the storage initializer writes for `storage_uri`, an hf:// repository whole:
    `catalog.Model.download_bytes`) + weights to GPU (the weights alone: the server reads one copy) + engine
    init."""
    gb = model.weights_gib * 1.073741824
    download_gb = model.download_gib(storage_uri) * 1.073741824
    download = 0.0 if cache_hit else download_gb / slow_rate(cold.download_gbps, level)
    return download + gb / slow_rate(load_rate_gbps or cold.load_gbps, level) + slow_s(cold.engine_init_s, level)


GATE_SCENARIOS = ("steady", "spike", "rollout", "scaleFromZero", "nodeLoss")   # gate/stress.py
UNDECIDED_POLICIES = ("estimate", "warn", "fail")   # gate.undecided (gate/verdict.py); the first is the default
MAX_REPLICATIONS = 1000   # the most gate.replications.max may be
COLD_START_MISS_FRACTION = 0.2   # the most runs (of gate.durationS) with a slower cold start the gate accepts
# Replications before the maxColdStartS term can pass: 0 misses must bring its Clopper–Pearson upper end to 0.2.
COLD_START_RUNS_TO_PASS = zero_event_trials(COLD_START_MISS_FRACTION)


def parse_gate(sec: Section) -> GateConfig:
    out = GateConfig(enabled=sec.bool("enabled", True), enforce=sec.bool("enforce", True),
                     duration_s=sec.float("durationS", 900.0, min=60, max=86400),
                     warmup_s=sec.float("warmupS", 0.0, min=0, max=86400),
                     seed=sec.int("seed", 1, min=0, max=2**31 - 1),
                     undecided=sec.choice("undecided", UNDECIDED_POLICIES, UNDECIDED_POLICIES[0]),
                     request_budget=sec.int("requestBudget", DEFAULT_REQUEST_BUDGET, min=1000, max=10**9),
                     total_request_budget=sec.int("totalRequestBudget", DEFAULT_TOTAL_REQUEST_BUDGET, min=1000,
                                                  max=MAX_TOTAL_REQUEST_BUDGET))
    reps = sec.section("replications")
    lo = reps.int("min", 5, min=2, max=1000)
    hi = reps.int("max", max(DEFAULT_MAX_REPLICATIONS, lo or 0), min=2, max=MAX_REPLICATIONS)
    reps.done()
    scenarios = sec.raw("scenarios")
    if scenarios is not None:
        if not isinstance(scenarios, list) or not scenarios or any(s not in GATE_SCENARIOS for s in scenarios):
            sec.problem("scenarios", scenarios, "expected a non-empty list from " + ", ".join(GATE_SCENARIOS))
        else:
            out = replace(out, scenarios=tuple(s for s in GATE_SCENARIOS if s in scenarios))
    if lo is not None and hi is not None and hi < lo:
        reps.problem("max", hi, f"expected an integer >= replications.min ({lo})")
    elif lo is not None and hi is not None:
        out = replace(out, min_replications=lo, max_replications=hi)
    sec.done()
    return out


def check_gate_budget(gate: GateConfig, services: list[ServiceConfig], problems: list[Problem]) -> None:
    """Under `gate.undecided: fail`, the terms that could never pass (gate/verdict.py) would fail every time:
    refused here. (Under `estimate` or `warn` such a term passes with a warning at best; its note says why.)

    - `maxColdStartS` and the rollout scenario's term (runs whose new revision is not Ready within the progress
      deadline) are fractions of runs that pass only when 0 of `COLD_START_RUNS_TO_PASS` or more runs miss: a
      smaller `gate.replications.max` is refused.
    - A rate limit (`maxErrorRate`, `max503Rate`) of 0 in a scenario the gate runs, or a steady one below the
      lowest upper end 0 errors can reach in `max` steady runs (`_rate_limits`)."""
    if not gate.enabled or gate.undecided != "fail":
        return
    checked = [(i, svc) for i, svc in enumerate(services) if svc.workload is not None and svc.slo is not None]
    if gate.max_replications < COLD_START_RUNS_TO_PASS:
        why = [f"services[{i}] ({svc.name}) {what}" for i, svc in checked for what in _fraction_terms(gate, svc)]
        if why:
            problems.append(Problem("gate.replications.max", gate.max_replications, f"expected at least "
                                    f"{COLD_START_RUNS_TO_PASS} under gate.undecided: fail: {'; '.join(why)} — a "
                                    f"fraction of runs that passes only when 0 of {COLD_START_RUNS_TO_PASS} or more "
                                    "replications miss (Clopper–Pearson 95 % upper end ≤ "
                                    f"{COLD_START_MISS_FRACTION}), so it would fail every time; raise "
                                    "replications.max or use gate.undecided: estimate"))
    for i, svc in checked:
        _rate_limits(gate, i, svc, problems)


def _fraction_terms(gate: GateConfig, svc: ServiceConfig) -> list[str]:
    """What makes `svc` declare a term judged as a fraction of runs (gate/verdict.py)."""
    stress = [s.slo for s in vars(svc.stress).values()] if svc.stress else []
    out = []
    if svc.slo.max_cold_start_s is not None or any("max_cold_start_s" in s for s in stress):
        out.append("declares maxColdStartS")
    if "rollout" in gate.scenarios and judged_in(svc, "rollout"):
        out.append("is rolled out by the rollout scenario, whose term is the runs not Ready within the progress "
                   "deadline")
    return out


RATE_KEYS = {"max_error_rate": "maxErrorRate", "max_503_rate": "max503Rate"}
# The steady run's requests over `max` runs are estimated from the workload's mean arrivals (simulation/budget.py)
# with this margin, so that a limit is refused only when it could not pass with a quarter more requests than the
# mean either (with 0 errors there are no retries); nearer the bound the gate marks the term when it runs.
RATE_REQUESTS_MARGIN = 1.25


def _rate_limits(gate: GateConfig, i: int, svc: ServiceConfig, problems: list[Problem]) -> None:
    """A rate term that cannot pass: a limit of 0 anywhere the gate judges it (no number of error-free runs puts an
    upper end at 0: simulation.estimates.lowest_rate_upper) — the steady `slo`, which the spike, rollout and
    node-loss scenarios scale, or a stress `slo` override — and a steady limit below the bound reachable in `max`
    steady runs of the workload's expected requests (× RATE_REQUESTS_MARGIN). The scale-from-zero scenario's
    override is left to the run (whether it runs depends on config-autoscaler)."""
    runs = gate.max_replications
    per_run = 0.0
    if "steady" in gate.scenarios:   # the requests of its measured window, after the warm-up
        spec = parse_workload(Section(svc.workload, "", []), base_dir=str(PROJECT_ROOT))
        per_run = expected_requests(spec, gate.steady_run_s) - expected_requests(spec, gate.warmup_s)
    reach = passable_rate_limit(per_run * runs)
    could = (f"; a limit of {reach:g} could pass (the lowest 95 % upper end 0 errors reach in "
             f"gate.replications.max {runs} steady runs of ≈ {per_run:,.0f} requests)") if per_run > 0 else ""
    stress = {k: scenario_settings(svc.stress, k) for k in ("spike", "rollout", "nodeLoss")}
    on = [k for k in stress if k in gate.scenarios and judged_in(svc, k)]
    for field, key in RATE_KEYS.items():
        limit = getattr(svc.slo, field)
        derived = [k for k in on if field not in stress[k].slo]
        if limit <= 0 and ("steady" in gate.scenarios or derived):
            where = ["steady"] * ("steady" in gate.scenarios) + derived
            problems.append(Problem(f"services[{i}].slo.{key}", limit, f"expected a rate above 0 under "
                                    f"gate.undecided: fail: no number of error-free runs puts a 95 % upper end "
                                    f"at 0, so the term ({', '.join(where)}) would fail every time{could}; or use "
                                    "gate.undecided: estimate"))
        elif 0 < limit and per_run > 0 and limit < lowest_rate_upper(RATE_REQUESTS_MARGIN * per_run * runs):
            need = math.ceil(zero_event_trials(limit) / per_run)
            more = f"gate.replications.max {need}, " if need <= MAX_REPLICATIONS else ""
            problems.append(Problem(f"services[{i}].slo.{key}", limit, f"expected at least {reach:g} under "
                                    f"gate.undecided: fail: the lowest 95 % upper end 0 errors reach in "
                                    f"gate.replications.max {runs} steady runs of ≈ {per_run:,.0f} requests, so "
                                    f"this term would fail every time; or {more}a longer gate.durationS, or "
                                    "gate.undecided: estimate"))
        for k in on:
            if stress[k].slo.get(field, 1.0) <= 0:
                problems.append(Problem(f"services[{i}].stress.{k}.slo.{key}", 0.0, "expected a rate above 0 "
                                        "under gate.undecided: fail: no number of error-free runs puts a 95 % "
                                        "upper end at 0, so the term would fail every time; or use "
                                        "gate.undecided: estimate"))


def check_model_cache(mc: ModelCacheConfig, cluster: ClusterConfig, services: list[ServiceConfig],
                       problems: list[Problem]) -> None:
    """What the cache needs to serve every service: their namespace (it keys models by source URI, so two
    services may use two sources of one model)."""
    if mc.namespace != cluster.namespace:
        problems.append(Problem("modelCache.namespace", mc.namespace, f"expected the services' namespace "
                                f"{cluster.namespace!r} (cluster.namespace): a pod mounts only PVCs of its own "
                                "namespace, and the services read pvc://<pvcName>/<model>"))

"""What a node holds is per image and per model (simulation/cluster.py): a pod pulls its own image and downloads
its own model on a node where another service's pod pulled and downloaded theirs; the same image or model is
shared, and pods starting during a pull of their image wait for that one pull."""

from __future__ import annotations

import pytest

from simulation import load_scenario
from simulation.engine import Sim
from simulation.fleet import load_fleet, run_fleet

from tests.simulation.conftest import isvc

IMAGE_A, IMAGE_B = "registry.example/server-a:1.0", "registry.example/server-b:2.0"
# One warm 4-GPU node and no room for another: every pod starts on the node the first pods hold.
CLUSTER = {"gpus_per_node": 4, "max_nodes": 1, "node_provision_s": 60, "image_gib": 10, "image_pull_mib_s": 100,
           "model_download_mib_s": 500, "load_gib_s": 2, "warmup_s": 10, "model_cache": "node"}
PULL_S, DOWNLOAD_S = 10 * 1024 / 100, 4 * 1024 / 500     # image_gib / rate; weights_gib 4 / rate


def _service(name: str, trace, image: str | None, uri: str, min_r: int) -> dict:
    manifest = isvc(cc=1, min_replicas=min_r, max_replicas=2,
                    annotations={"autoscaling.knative.dev/target-utilization-percentage": "100"})
    manifest["metadata"]["name"] = name
    model = manifest["spec"]["predictor"]["model"]
    model["storageUri"] = uri
    if image:
        model["image"] = image
    return {"name": name, "inferenceService": manifest, "workload": {"kind": "trace", "path": str(trace)},
            "model": {"name": name, "weights_gib": 4},
            "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"}}


def _b_phases(tmp_path, image_a, image_b, uri_a="hf://org/a", uri_b="hf://org/b", **cluster) -> dict:
    """Service a holds the warm node (1 pod); b starts from zero on the same node for one request."""
    trace = tmp_path / "one.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n")
    fleet = {"name": "t", "duration_s": 900, "cluster": {**CLUSTER, **cluster},
             "services": [{"scenario": _service("a", trace, image_a, uri_a, 1)},
                          {"scenario": _service("b", trace, image_b, uri_b, 0), "from_zero": True}]}
    report = run_fleet(load_fleet(fleet), seed=1)["services"]["b"]
    assert report["cold_starts"] >= 1
    return report["cold_start_phases_mean_s"]


def test_a_pod_pulls_its_own_image_on_a_node_that_holds_another_services_image(tmp_path):
    ph = _b_phases(tmp_path, IMAGE_A, IMAGE_B)
    assert ph["node_s"] == 0                          # the warm node had room: no new node
    assert ph["image_pull_s"] == pytest.approx(PULL_S)


def test_a_pod_finds_its_image_where_another_service_pulled_the_same_one(tmp_path):
    assert _b_phases(tmp_path, IMAGE_A, IMAGE_A)["image_pull_s"] == 0


def test_runtime_image_is_keyed_by_the_runtime_so_a_custom_image_beside_it_is_pulled(tmp_path):
    # a on KServe's runtime (no image in the manifest), b on its own image; and two services on one runtime
    assert _b_phases(tmp_path, None, IMAGE_B)["image_pull_s"] == pytest.approx(PULL_S)
    assert _b_phases(tmp_path, None, None)["image_pull_s"] == 0


def test_the_node_cache_holds_each_model_by_storage_uri(tmp_path):
    other = _b_phases(tmp_path, IMAGE_A, IMAGE_A, "hf://org/a", "hf://org/b")
    assert other["download_s"] == pytest.approx(DOWNLOAD_S)
    same = _b_phases(tmp_path, IMAGE_A, IMAGE_A, "hf://org/a", "hf://org/a")
    assert same["download_s"] == 0
    # No node cache: KServe's storage initializer downloads into each pod's own emptyDir, same model or not.
    assert _b_phases(tmp_path, IMAGE_A, IMAGE_A, "hf://org/a", "hf://org/a",
                     model_cache="none")["download_s"] == pytest.approx(DOWNLOAD_S)


def test_warm_flags_off_leave_the_warm_node_without_the_image_or_model(tmp_path):
    ph = _b_phases(tmp_path, IMAGE_A, IMAGE_A, "hf://org/a", "hf://org/a",
                   image_cached_on_warm_nodes=False, model_cached_on_warm_nodes=False)
    assert ph["image_pull_s"] == pytest.approx(PULL_S) and ph["download_s"] == pytest.approx(DOWNLOAD_S)


def _two_pods_at_once(scn, tmp_path, cluster: dict, weights_gib: float) -> list[dict]:
    """Two requests from zero: two pods on one new 2-GPU node at once (`cluster` over the base); each pod's
    cold-start phases."""
    trace = tmp_path / "two.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                     "2023-11-16 18:15:46.6805900,374,44\n")
    m = {"inferenceService": scn.isvc(cc=1, min_replicas=0, max_replicas=2, annotations={
             "autoscaling.knative.dev/target-utilization-percentage": "100"}),
         "workload": {"kind": "trace", "path": str(trace)},
         "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"},
         "cluster": {"gpus_per_node": 2, "max_nodes": 1, "warm_nodes": 0, "node_provision_s": 30, "image_gib": 10,
                     "warmup_s": 5, **cluster},
         "model": {"name": "m", "weights_gib": weights_gib}, "initial_replicas": 0, "duration_s": 600}
    sim = Sim(load_scenario(m), 3)
    sim.run()
    return sim.cold_phases


def test_pods_starting_during_a_pull_of_their_image_wait_for_that_pull_not_a_second_one(scn, tmp_path):
    # The pull rate is drawn per pull: one pull → both wait the same time (two pulls would have drawn two rates).
    pulls = [p["image_pull_s"] for p in _two_pods_at_once(
        scn, tmp_path, {"image_pull_mib_s": {"dist": "uniform", "low": 50, "high": 150}}, 1)]
    assert len(pulls) == 2 and pulls[0] > 0 and pulls[0] == pulls[1]


def test_empty_warm_nodes_hold_every_services_image_and_model(scn):
    """A warm node beyond what the first pods need is pre-pulled for the scenario (unchanged for one service)."""
    m = {"inferenceService": scn.isvc(cc=1, min_replicas=1, max_replicas=3),
         "workload": {"kind": "step", "rate": 0.05, "at_s": 60, "to_rate": 3},
         "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic"},
         "cluster": {"gpus_per_node": 1, "max_nodes": 3, "warm_nodes": 3, "image_gib": 10, "warmup_s": 5},
         "model": {"name": "m", "weights_gib": 1}, "duration_s": 300}
    sim = Sim(load_scenario(m), 1)
    sim.run()
    assert sim.cold_phases and all(p["image_pull_s"] == 0 and p["download_s"] == 0 for p in sim.cold_phases)


def test_refs_name_the_image_and_the_storage_uri(scn):
    from simulation.cluster import image_ref, model_ref
    base = {"workload": {"kind": "poisson", "rate": 1}, "model": {"name": "m", "weights_gib": 1}, "duration_s": 60}
    runtime = load_scenario({**base, "inferenceService": scn.isvc()})
    assert image_ref(runtime) == "runtime:huggingface" and model_ref(runtime) == "model:m"
    manifest = scn.isvc()
    manifest["spec"]["predictor"]["model"].update(image=IMAGE_A, storageUri="s3://bucket/m/")
    own = load_scenario({**base, "inferenceService": manifest})
    assert image_ref(own) == IMAGE_A and model_ref(own) == "uri:s3://bucket/m/"


def test_pods_starting_during_a_download_of_their_model_wait_for_it(scn, tmp_path):
    """Review 12 (mutation testing), N6: two pods starting together on one new node share the node's download of
    their model (model_cache: node): the second waits for the first's, it does not get the weights at once."""
    downloads = [p["download_s"] for p in _two_pods_at_once(scn, tmp_path, {
        "model_cache": "node", "model_download_mib_s": {"dist": "uniform", "low": 50, "high": 150}}, 4)]
    assert len(downloads) == 2 and downloads[0] > 0 and downloads[0] == pytest.approx(downloads[1])

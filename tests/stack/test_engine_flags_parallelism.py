"""Tensor parallelism and the pod's GPUs: a tensor-parallel flag or variable may only restate the pod's GPU count,
and CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES may not narrow the GPUs the server sees (simulation/engine_flags.py;
kserve huggingfaceserver `vllm/vllm_model.py: start_engine`, TGI `find_num_shards`)."""

from __future__ import annotations

import pytest

from runtime_stack import OPENAI, refused, rt_cfg, sim_spec


# --- tensor parallelism is the pod's GPU count (rev-engine finding 1) -------------------------------------------------
@pytest.mark.parametrize("runtime, gpus, arg, why", [
    ({"engine": "vllm"}, 2, "--tensor-parallel-size=4", "KServe's huggingfaceserver ignores it"),
    ({"engine": "vllm"}, 2, "-tp=1", "KServe's huggingfaceserver ignores it"),
    ({"engine": "vllm", "image": OPENAI}, 1, "--tensor-parallel-size=2", "cannot start more workers"),
    ({"engine": "vllm", "image": OPENAI}, 1, "--tensor_parallel_size=2", "cannot start more workers"),
    ({"engine": "tgi"}, 1, "--num-shard=2", "fails with more shards than visible GPUs"),
], ids=["hf", "hf-short", "vllm-openai", "vllm-openai-underscore", "tgi"])
def test_a_tensor_parallel_flag_other_than_the_gpu_count_is_refused(runtime, gpus, arg, why):
    text = refused(rt_cfg({**runtime, "args": [arg]}, gpus))
    assert f"services[0].runtime.args: got '{arg}'; expected {gpus} (resources.gpus) or no such setting" in text
    assert why in text
    sim_spec(rt_cfg({**runtime, "args": [f"{arg.split('=')[0]}={gpus}"]}, gpus))     # control: restating it is fine


def test_tgi_shard_settings_in_env_or_sharded_must_match_the_gpus():
    text = refused(rt_cfg({"engine": "tgi", "env": {"NUM_SHARD": "2"}}))
    assert "services[0].runtime.env.NUM_SHARD: got '2'; expected 1 (resources.gpus)" in text
    text = refused(rt_cfg({"engine": "tgi", "args": ["--sharded=true"]}))
    assert "got '--sharded=true'; expected false with 1 GPU(s)" in text and "find_num_shards" in text


def test_the_simulation_runs_the_gpu_count_whatever_the_flag_says():
    """r03: llama-3-70b on 2 L40S with `--tensor-parallel-size=4` was simulated at tp 4 (and started)."""
    from simulation.isvc import ServingSpec, server_from_manifest

    man = {"metadata": {"annotations": {"preflight.kserve.io/engine": "vllm",
                                        "preflight.kserve.io/model": "llama-3-70b"}}}
    derived = server_from_manifest(man, ServingSpec(gpus=2, args=("--max-model-len=4096", "--tensor-parallel-size=4")))
    assert derived["tensor_parallel_size"] == 2
    one = server_from_manifest(man, ServingSpec(gpus=1, args=("--tensor-parallel-size=4",)))
    assert "tensor_parallel_size" not in one


# --- CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES in runtime.env (rev12-runtimes F4) ---------------------------------
@pytest.mark.parametrize("engine", ["vllm", "tgi", "naive"])
@pytest.mark.parametrize("value", ["0", "0,1,2", "0,0,1,2", "0,1,2,4", "GPU-8a1b2c3d", "0, 1, 2, 3"])
def test_cuda_visible_devices_that_do_not_name_every_gpu_of_the_pod_are_refused(engine, value):
    """r8: 4 GPUs with CUDA_VISIBLE_DEVICES=0 ran one shard (huggingfaceserver: tp = torch.cuda.device_count();
    TGI: num_cuda_devices counts the variable) while the gate simulated four."""
    text = refused(rt_cfg({"engine": engine, "env": {"CUDA_VISIBLE_DEVICES": value}}, gpus=4))
    assert f"services[0].runtime.env.CUDA_VISIBLE_DEVICES: got '{value}'; expected no CUDA_VISIBLE_DEVICES, or " \
           "0,1,2,3 (each of the pod's 4 GPU(s) once)" in text
    assert "one shard per GPU of resources.gpus" in text


@pytest.mark.parametrize("engine", ["vllm", "tgi", "naive"])
def test_cuda_visible_devices_naming_every_gpu_of_the_pod_is_accepted(engine):
    sim_spec(rt_cfg({"engine": engine, "env": {"CUDA_VISIBLE_DEVICES": "3,1,0,2"}}, gpus=4))
    sim_spec(rt_cfg({"engine": engine, "env": {"CUDA_VISIBLE_DEVICES": "0"}}, gpus=1))


@pytest.mark.parametrize("engine", ["vllm", "tgi", "naive"])
def test_nvidia_visible_devices_is_the_device_plugins_and_refused(engine):
    text = refused(rt_cfg({"engine": engine, "env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, gpus=2))
    assert "services[0].runtime.env.NVIDIA_VISIBLE_DEVICES: got 'all'; expected no NVIDIA_VISIBLE_DEVICES: the " \
           "NVIDIA device plugin sets it" in text

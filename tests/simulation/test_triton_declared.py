"""Triton's dynamic batching as its config.pbtxt declares it: the stack's limits → the ISVC's declared-config
annotations → the simulated batcher (delay, queue bound → 503)."""

import shutil

import pytest

from stackconfig.load import ROOT, load_stack


def test_tritons_declared_dynamic_batching_reaches_the_simulation(tmp_path):
    """limits.maxQueueDelayMicroseconds / maxQueueSize → the ISVC's declared-config annotations → the Triton
    server's batcher delay and queue bound (503 when full)."""
    import gate
    from simulation import load_scenario
    cfg = load_stack("staging")
    vision = next(s for s in cfg.services if s.engine == "triton")
    caps = type(vision.caps)(**{**vision.caps.__dict__, "max_queue_delay_us": 2000, "max_queue_size": 8})
    svc = type(vision)(**{**vision.__dict__, "caps": caps})
    parsed = load_scenario(gate.scenario_for(cfg, svc), base_dir=ROOT)
    assert (parsed.server.spec.max_queue_delay_us, parsed.server.spec.max_queue_size) == (2000, 8)


def test_queue_caps_are_triton_only(tmp_path):
    from validation.errors import InputError
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    path = tmp_path / "stacks" / "Pulumi.prod.yaml"
    text = path.read_text().replace("limits: {maxInputTokens: 6144,", "limits: {maxQueueSize: 4, maxInputTokens: 6144,")
    path.write_text(text)
    with pytest.raises(InputError, match="maxQueueSize"):
        load_stack("prod", root=tmp_path)

"""Settings a cluster would accept and then strand: refused at load, naming the key, the value and what is allowed.

The model cache's access mode and StorageClass (one volume written and read from many nodes), a progress deadline
below Knative's second precision, and an initial scale above maxReplicas (Knative runs it regardless)."""

from __future__ import annotations

import pytest

from program_refusal import refusal
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config

P = "kserve-preflight"
DEADLINE = "serving.knative.dev/progress-deadline"
INITIAL = "autoscaling.knative.dev/initial-scale"


def _load(stack: str, edit) -> None:
    """Parse `stack` after `edit` of its project values (no prefix): the passing controls, without the gate."""
    project, values = stack_config_values(stack)
    config = project_values(values, project)
    edit(config)
    parse_stack_config(config, project, stack)


@pytest.mark.parametrize("mode, effect", [("ReadWriteOnce", "Multi-Attach error"),
                                          ("ReadWriteOncePod", "Multi-Attach error"),
                                          ("ReadOnlyMany", "could not write a single model")])
def test_model_cache_needs_read_write_many(mode, effect, registered):
    message = refusal("prod", lambda c: c[f"{P}:modelCache"].update(accessMode=mode), registered)
    assert f"modelCache.accessMode: got '{mode}'; expected ReadWriteMany" in message, message
    assert "writes the cache on every Linux node" in message and effect in message


def test_access_mode_does_not_matter_without_the_cache():
    _load("prod", lambda c: c["modelCache"].update(accessMode="ReadWriteOnce", enabled=False))
    _load("prod", lambda c: c["modelCache"].update(accessMode="ReadWriteMany"))


@pytest.mark.parametrize("storage_class", ["gp2", "gp3", "io2", "ebs-sc", "gp3-ebs-encrypted"])
def test_model_cache_refuses_an_ebs_storage_class(storage_class, registered):
    message = refusal("prod", lambda c: c[f"{P}:modelCache"].update(storageClass=storage_class), registered)
    assert f"modelCache.storageClass: got '{storage_class}'" in message, message
    assert "named like an Amazon EBS class" in message and "EFS CSI driver" in message


@pytest.mark.parametrize("storage_class", ["efs-sc", "fsx-lustre", "shared-models", "gp3x"])
def test_other_storage_classes_are_taken_as_shared(storage_class):
    _load("prod", lambda c: c["modelCache"].update(storageClass=storage_class))


@pytest.mark.parametrize("deadline", ["900500ms", "15m0.5s", "1.5s"])
def test_progress_deadline_below_second_precision_is_refused(deadline, registered):
    """knative pkg/apis/serving/v1/revision_validation.go validateProgressDeadlineAnnotation."""
    message = refusal("dev", lambda c: c[f"{P}:services"][0]["annotations"].update({DEADLINE: deadline}),
                      registered)
    assert (f"annotations[{DEADLINE}]: got '{deadline}'; expected a positive duration in whole seconds"
            in message), message
    assert "below second precision" in message


@pytest.mark.parametrize("deadline", ["900s", "15m", "900000ms", "1h0m1s"])
def test_progress_deadline_in_whole_seconds_passes(deadline):
    _load("dev", lambda c: c["services"][0]["annotations"].update({DEADLINE: deadline}))


def test_initial_scale_annotation_above_max_replicas_is_refused(registered):
    message = refusal("prod", lambda c: c[f"{P}:services"][1]["annotations"].update({INITIAL: "6"}), registered)
    assert f"services[1].annotations[{INITIAL}]: got '6'; expected at most services[1].maxReplicas (4)" in message
    assert "beyond max-scale" in message


def test_cluster_initial_scale_above_a_services_max_replicas_is_refused(registered):
    """prod's chat sets its own initial-scale (10 <= 12); code (maxReplicas 4) takes the cluster's."""
    message = refusal("prod", lambda c: c.__setitem__(f"{P}:knative", {"autoscaler": {"initial-scale": "5"}}),
                      registered)
    assert "knative.autoscaler[initial-scale]: got 5; expected at most services[1].maxReplicas (4) of code" \
        in message, message
    assert "services[0]" not in message


def test_initial_scale_up_to_max_replicas_passes():
    _load("prod", lambda c: c["services"][1]["annotations"].update({INITIAL: "4"}))
    _load("prod", lambda c: c.update(knative={"autoscaler": {"initial-scale": "4"}}))

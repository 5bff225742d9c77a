"""KServe's deployment-mode names and the update rule that guards them, checked offline.

KServe v0.16.0 renamed the modes (`pkg/constants/constants.go`: `Knative`, `Standard`;
`Serverless`, `RawDeployment` kept as `LegacyServerless`/`LegacyRawDeployment`). v0.15.2 knows only the legacy
names: its `GetDeploymentMode` (`pkg/controller/v1beta1/inferenceservice/utils/utils.go`) reconciles any other
value in the cluster's default mode, so a new name on 0.15 is refused here (`mode_name_refusals`). From v0.16.0
`GetDeploymentMode` maps a legacy annotation to the new name and the controller's `updateStatus` records that
name in `status.deploymentMode`, which it never rewrites later (the recorded status wins over the annotation).
`validateDeploymentMode` (`inference_service_validation.go`) refuses every UPDATE whose annotation differs from
the recorded status *as written*. In v0.16.0 nothing normalizes the annotation first and `ValidateUpdate` has no
deletion exception, so a legacy annotation over a new-name status refuses every later update, including the
controller's finalizer removal (the delete hangs). kserve#5025 (93752a1ae, first in v0.17.0): the defaulting
webhook (`inference_service_defaults.go: DefaultInferenceService`, on CREATE and UPDATE) rewrites legacy
annotations to the new names, and `ValidateUpdate` skips the check once a deletion timestamp is set.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from validation.annotations import MODE_ANNOTATION
from validation.cluster_admission import OLDEST_KSERVE, ClusterAdmission, Refusal, release

# Every name of the two modes the stack renders and the simulation models → the mode (ParseDeploymentMode), in the
# order the stack's `deploymentMode` choice lists them. kserve pkg/constants/constants.go (v0.16.0):
# LegacyServerless, LegacyRawDeployment → the names that replace them.
MODES = {"Knative": "Knative", "Serverless": "Knative", "Standard": "Standard", "RawDeployment": "Standard"}
STANDARD_MODES = tuple(name for name, mode in MODES.items() if mode == "Standard")
LEGACY_MODE_NAMES = {name: mode for name, mode in MODES.items() if name != mode}
MODE_NAMES_SINCE = (0, 16)  # the first release that knows `Knative`/`Standard` (and records them in status)
MODE_ANNOTATION_NORMALIZED_SINCE = (0, 17)  # kserve#5025: the defaulting webhook rewrites legacy annotations
# GetDeploymentMode: the values each release reconciles as written; anything else gets the default mode.
KNOWN_MODES = {(0, 15): ("Serverless", "RawDeployment", "ModelMesh"), MODE_NAMES_SINCE: ("Knative", "Standard",
                                                                                        "ModelMesh")}


def mode_name(mode: str, version: tuple[int, int]) -> str:
    """The `serving.kserve.io/deploymentMode` value for a mode (`Knative` or `Standard`) on KServe `version`: the
    new name from 0.16, the only one 0.16.0 lets a service keep (see the module docstring), the legacy one before,
    the only one 0.15 reads."""
    if version >= MODE_NAMES_SINCE:
        return mode
    return {new: old for old, new in LEGACY_MODE_NAMES.items()}[mode]


def recorded_mode(annotation: str | None, version: tuple[int, int], default: str = "Knative") -> str:
    """`status.deploymentMode` as KServe `version` records it when it first reconciles a service with this
    annotation (v0.15.2 / v0.16.0 `GetDeploymentMode` + `updateStatus`; the default mode when the value is not one
    it knows; the cluster's defaultDeploymentMode, assumed KServe's shipped `Serverless`, read as `Knative` from
    0.16)."""
    if version >= MODE_NAMES_SINCE:
        value = LEGACY_MODE_NAMES.get(annotation or "", annotation)
        return value if value in KNOWN_MODES[MODE_NAMES_SINCE] else default
    return annotation if annotation in KNOWN_MODES[OLDEST_KSERVE] else mode_name(default, version)


def mode_name_refusals(obj: str, ann: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    """A mode name the cluster's KServe does not know: 0.15's `GetDeploymentMode` reconciles it in the default mode
    (and records that in status), so a `Standard` service would become a Knative one (module docstring)."""
    value = ann.get(MODE_ANNOTATION)
    known = KNOWN_MODES[OLDEST_KSERVE] if cluster.kserve_version < MODE_NAMES_SINCE else (
        *KNOWN_MODES[MODE_NAMES_SINCE], *LEGACY_MODE_NAMES)
    if value is not None and value not in known:
        yield Refusal(obj, f"metadata.annotations[{MODE_ANNOTATION}]",
                      "controller/v1beta1/inferenceservice/utils/utils.go GetDeploymentMode",
                      f"KServe {release(cluster.kserve_version)} does not know deploymentMode {value!r} and "
                      f"reconciles the service in its default mode; expected one of {', '.join(known)} "
                      "(set kserve.version to the cluster's KServe release)")


def deployment_mode_update_refusals(obj: str, ann: Mapping, previous: Mapping,
                                    cluster: ClusterAdmission) -> Iterator[Refusal]:
    """`validateDeploymentMode` on an UPDATE of `previous` (the deployed object; its `status.deploymentMode` when
    given, else the name KServe recorded when it created it, `recorded_mode`): the new annotation, after the
    defaulting webhook's rewrite from 0.17, must equal the recorded status as written (module docstring)."""
    version = cluster.kserve_version
    status = str(((previous.get("status") or {}).get("deploymentMode")) or recorded_mode(
        ((previous.get("metadata") or {}).get("annotations") or {}).get(MODE_ANNOTATION), version))
    written = ann.get(MODE_ANNOTATION)
    if written is None:  # validateDeploymentMode checks only a present annotation; the status decides the mode
        return
    admitted = LEGACY_MODE_NAMES.get(written, written) if version >= MODE_ANNOTATION_NORMALIZED_SINCE else written
    if admitted == status:
        return
    where = f"metadata.annotations[{MODE_ANNOTATION}]"
    rule = "inference_service_validation.go validateDeploymentMode"
    message = f"update rejected: deploymentMode cannot be changed from {status!r} to {admitted!r}"
    if mode_of(status) != mode_of(admitted):
        yield Refusal(obj, where, rule, message + "; the InferenceService must be replaced (delete and create)")
    elif version < MODE_ANNOTATION_NORMALIZED_SINCE:
        yield Refusal(obj, where, rule, message + f": KServe {release(version)} compares the annotation with "
                      "status.deploymentMode as written, on every update including the finalizer removal of a "
                      f"delete; write {status!r} (kserve.version says which name the stack writes), or replace the "
                      "InferenceService (docs/deploying.md §9, kserve.version)")
    else:
        yield Refusal(obj, where, rule, message + f": KServe {release(version)} rewrites a legacy annotation to "
                      f"{admitted!r}, but this service's status still records {status!r} (created by KServe 0.15), "
                      "which KServe never rewrites; replace the InferenceService (docs/deploying.md §9, "
                      "kserve.version)")


def mode_of(value: str) -> str:
    """The mode a deploymentMode value names, Knative (KServe's default) for any but a Standard name."""
    return "Standard" if value in STANDARD_MODES else "Knative"


def simulated_mode(value: object) -> str | None:
    """`Knative` or `Standard` for one of their names (MODES), else None (ModelMesh, a typo, not a string)."""
    return MODES.get(value) if isinstance(value, str) else None

"""Is a suggested edit one `preflight check` takes? Each tip of the advice (preflight/advice.py) is parsed by the stack
config's own loader, as `preflight whatif --set …` parses it, and put through check's load-time checks (pods fit
their nodes; the rollout check, gate/rollout_capacity.py, at the static bound and at the expected loads check
judges it at) before it is printed; one whose next rollout would not fit comes with the gpuNodeGroup.maxSize that
holds it."""

from __future__ import annotations

from preflight.tips import Tip
from stackconfig.schema import ServiceConfig, StackConfig, parse_stack_config
from validation.errors import InputError


def _refusals(values: dict, cfg: StackConfig, svc: ServiceConfig, tip: Tip,
              loads: dict[str, float] | None = None) -> set[str] | None:
    """What `preflight check` would refuse in the config `tip`'s edits make of `values` (the stack's project
    keys), as the key paths it names: None when the loader refuses it (as `preflight whatif --set …` parses it);
    else the pods that fit no node (`check_pods_can_run`) and the rollout problems (gate/rollout_capacity.py
    `rollout_problems`: the next rollout does not fit the node group, or outlasts its progress deadline) at each
    service's expected load `loads` (none: its initial scale, the static bound the Pulumi program checks before
    any simulation, exit status 2)."""
    from gate.rollout_capacity import rollout_problems
    from manifests.admission import check_pods_can_run
    from preflight.overrides import apply_sets

    try:
        edited = parse_stack_config(apply_sets(values, tip.sets(svc)), cfg.project, cfg.stack)
    except InputError:
        return None
    found = {p.path for p in rollout_problems(edited, loads)}
    try:
        check_pods_can_run(edited)
    except InputError as err:
        found |= {p.path for p in err.problems}
    return found


def _new_refusals(values: dict, cfg: StackConfig, svc: ServiceConfig, tip: Tip,
                  loads: dict[str, float] | None = None) -> set[str] | None:
    """`_refusals` of `tip` that the stack as it is does not have (a tip is not blamed for what it leaves as it
    was), at the static bound (what refuses the stack before any simulation) and at `loads` (what check's rollout
    capacity judges after it); None when the loader refuses it."""
    new: set[str] = set()
    for at in (None, loads) if loads else (None,):
        found = _refusals(values, cfg, svc, tip, at)
        if found is None:
            return None
        new |= found - (_refusals(values, cfg, svc, Tip("", ()), at) or set())
    return new


def accepted(values: dict, cfg: StackConfig, svc: ServiceConfig, tip: Tip,
             loads: dict[str, float] | None = None) -> bool:
    """Whether `preflight check` takes `tip`'s edits on `values` as they are: the loader takes them, and the pod-fit
    and rollout checks find nothing the stack did not have (`_refusals`)."""
    return _new_refusals(values, cfg, svc, tip, loads) == set()


NODE_STEPS = 64  # larger node groups tried for a tip whose rollout does not fit, before the tip is left out


def fitted(values: dict, cfg: StackConfig, svc: ServiceConfig, tip: Tip,
           loads: dict[str, float] | None = None) -> Tip | None:
    """`tip` in a form `preflight check` takes (`accepted`), or None. A tip whose next rollout does not fit the
    node group (raising minReplicas raises the new revision's initial scale: old revision at its expected load +
    new one at max(minReplicas, initial-scale)) comes paired with the smallest gpuNodeGroup.maxSize that holds
    it, as the rollout check asks; one the loader refuses, or that no node group fixes, is left out."""
    found = _new_refusals(values, cfg, svc, tip, loads)
    if found is None:
        return None
    if not found:
        return tip
    node = "gpuNodeGroup.maxSize"
    edits = dict(tip.edits)
    for size in range(max(cfg.node_group.max_size, int(edits.get(node, 0))) + 1,
                      cfg.node_group.max_size + NODE_STEPS + 1):
        grown = Tip(tip.why, tuple({**edits, node: size}.items()))
        found = _new_refusals(values, cfg, svc, grown, loads)
        if found is None:
            return None
        if not found:
            note = f" (with {node} {size}, so the next rollout's old and new pods fit: the rollout check)"
            return Tip(tip.why + note, grown.edits)
    return None


def stack_values(cfg: StackConfig) -> dict | None:
    from preflight.overrides import stack_values

    try:
        return stack_values(cfg.stack)[1]
    except InputError:
        return None

"""Trial 0 is today's configuration: `current` reads the parsed stack (the cluster's knative.autoscaler where the
service sets no annotation), and a candidate writes only the knobs it changes (tuner/space.py)."""

from __future__ import annotations

from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from tuner.space import ANN, apply, changed, current

WINDOW, DELAY = ANN + "window", ANN + "scale-down-delay"


def _dev(cluster: dict | None = None) -> tuple[str, dict]:
    """dev with chat's window and delay annotations removed, and `cluster` as knative.autoscaler."""
    project, raw = stack_config_values("dev")
    values = project_values(raw, project)
    chat = values["services"][0]
    chat["annotations"].pop(WINDOW)
    chat["annotations"].pop(DELAY)
    if cluster is not None:
        values["knative"] = {"autoscaler": cluster}
    return project, values


def test_today_takes_the_clusters_autoscaler_where_the_service_sets_no_annotation():
    """The reviewer's repro: knative.autoscaler stable-window 180s, scale-down-delay 5m cluster-wide; today's
    window and delay were Knative's defaults (60s, 0s), and trial 0 pinned them as annotations."""
    project, values = _dev({"stable-window": "180s", "scale-down-delay": "5m", "initial-scale": "2"})
    cfg = parse_stack_config(values, project, "dev")
    today = current(cfg, "chat")
    assert (today["window"], today["scaleDownDelay"], today["initialScale"]) == ("180s", "5m", 2)
    out = apply(values, "chat", changed(today, today))
    assert out == values                                        # trial 0 edits nothing
    assert parse_stack_config(out, project, "dev") == cfg
    project, values = _dev()                                    # no cluster keys: Knative's defaults
    today = current(parse_stack_config(values, project, "dev"), "chat")
    assert (today["window"], today["scaleDownDelay"], today["initialScale"]) == ("60s", "0s", 1)


def test_today_is_the_parsed_stack_with_the_loaders_defaults():
    project, values = _dev()
    chat = values["services"][0]
    for key in ("minReplicas", "gpuMemoryUtilization"):
        chat.pop(key, None)
    for key in ("minSize", "desiredSize"):
        values["gpuNodeGroup"].pop(key, None)
    cfg = parse_stack_config(values, project, "dev")
    today = current(cfg, "chat")
    svc = cfg.services[0]
    assert (today["minReplicas"], today["gpuMemoryUtilization"], today["nodeMin"]) == (1, 0.9, 0)
    assert (today["maxReplicas"], today["nodeMax"], today["instanceType"]) == (
        svc.max_replicas, cfg.node_group.max_size, cfg.node_group.instance_types[0])
    assert apply(values, "chat", changed(today, today)) == values


def test_a_candidate_writes_only_what_it_changes():
    project, values = _dev({"stable-window": "180s", "scale-down-delay": "5m"})
    today = current(parse_stack_config(values, project, "dev"), "chat")
    edit = changed({**today, "window": "300s", "nodeMax": today["nodeMax"] + 1}, today)
    assert edit == {"window": "300s", "nodeMax": today["nodeMax"] + 1, "nodeMin": today["nodeMin"]}
    out = apply(values, "chat", edit)
    chat = out["services"][0]
    assert chat["annotations"][WINDOW] == "300s" and DELAY not in chat["annotations"]   # the cluster's 5m stays
    assert out["gpuNodeGroup"]["desiredSize"] == today["nodeMin"]
    cfg = parse_stack_config(out, project, "dev")
    assert cfg.services[0].annotations.get(DELAY) is None and cfg.knative.autoscaler.scale_down_delay_s == 300

"""Advice for errors from crashes (preflight/advice.py): CUDA OOM, whatever status code its requests got (guide 000
§5/§6's order: one request per pod, a batch cap, an input cap, before more replicas), a lost node, and other
container restarts. The image-model caps come from the simulation's memory model (simulation/gpu/memory.py)."""

from __future__ import annotations

from gate.verdict import Verdict
from preflight.summary import oom_counts
from preflight.tips import Tip, round_down
from simulation.gpu.server_common import OOM_REASON
from stackconfig.schema import ServiceConfig, StackConfig


def oom_seen(v: Verdict) -> bool:
    """Whether replication 0 had a CUDA OOM, whatever status code its requests got."""
    return any(oom_counts(v.report)) or bool((v.report.get("restart_reasons") or {}).get(OOM_REASON))


def crash_cause(v: Verdict) -> str:
    """Why in-flight requests got 502s in replication 0: "oom" (the server's CUDA OOM crashes), "node loss" (the
    nodeLoss scenario without an OOM), else "restarts" (another container restart, e.g. a failed start)."""
    r = v.report
    if (r.get("server_stats") or {}).get("oom_crashes") or (r.get("restart_reasons") or {}).get(OOM_REASON):
        return "oom"
    return "node loss" if v.scenario == "nodeLoss" else "restarts"


def _largest_image(svc: ServiceConfig) -> int | None:
    """The largest image (pixels) a pod can be sent: the pixel cap, else the workload's largest input."""
    if svc.caps.max_image_pixels:
        return svc.caps.max_image_pixels
    sizes = (svc.workload or {}).get("input_tokens")
    top = sizes.get("max") if isinstance(sizes, dict) else sizes
    return int(top) if isinstance(top, (int, float)) and not isinstance(top, bool) and top > 0 else None


def _free_beside_weights(cfg: StackConfig, svc: ServiceConfig) -> int:
    """Bytes the CUDA allocator has on one GPU beside the weights and overhead (the simulation's Triton memory
    model, simulation/gpu/memory.py `naive_base_bytes`): what activations can use."""
    from simulation.gpu.memory import naive_base_bytes

    return cfg.node_group.gpu.cuda_total_bytes - naive_base_bytes(svc.model)


def _images_that_fit(cfg: StackConfig, svc: ServiceConfig, pixels: int) -> int:
    """Images of `pixels` each one GPU holds beside the weights: the simulation's Triton memory model (weights +
    overhead + per-image activation scaled by pixels, against what the CUDA allocator can have)."""
    from simulation.gpu.memory import vision_activation_bytes

    free = _free_beside_weights(cfg, svc)
    per_image = vision_activation_bytes(svc.model, pixels)
    return max(0, free // per_image) if per_image > 0 else 0


def _pixels_that_fit(cfg: StackConfig, svc: ServiceConfig) -> int:
    """The largest image (pixels, two significant figures, rounded down) one GPU holds alone."""
    from simulation.gpu.memory import vision_activation_bytes

    free = _free_beside_weights(cfg, svc)
    per_pixel = vision_activation_bytes(svc.model, 10**6) / 10**6
    return round_down(free / per_pixel) if per_pixel > 0 and free > 0 else 0


def oom_tips(cfg: StackConfig, svc: ServiceConfig, v: Verdict) -> list[Tip | str]:
    """Guide 000 §5/§6: cut the OOM first (one request per pod, a batch cap, an input cap), then the rest."""
    events, failed, crashes = oom_counts(v.report)
    why = ("502s from CUDA OOM crashes" if crashes or crash_cause(v) == "oom" else
           f"500s from CUDA OOM ({events} OOM events failed {failed} requests in replication 0; the server "
           "answers 500 and keeps serving, so no pod restarts)")
    knative = svc.deployment_mode == "Knative"
    cc = svc.container_concurrency or 0
    out: list[Tip | str] = []
    if knative and cc != 1:
        out.append(Tip.of(f"{why}: one request per pod", "containerConcurrency", 1,
                        *([("scaleTarget", 1)] if svc.scale_target and svc.scale_target > 1 else [])))
    cap = svc.caps.max_batch_size or (4 if svc.engine == "triton" else None)   # Triton's own default: 4
    batch = min(cap, cc) if cap and knative and cc else cap    # the queue-proxy lets at most cc into a pod
    image = _largest_image(svc) if svc.model.kind == "vision" else None
    fit = _images_that_fit(cfg, svc, image) if image else None
    if batch and fit is not None and 1 <= fit < batch:
        out.append(Tip.of(f"{why}: a batch of at most {fit} images of up to {image:,} pixels fits in one "
                        f"{cfg.node_group.gpu.name}'s memory (a smaller limits.maxImagePixels lets more fit)",
                        "limits.maxBatchSize", fit))
    elif batch and batch > 1 and fit != 0:
        out.append(Tip.of(f"{why}: a smaller batch" + ("" if knative else " (Standard mode has no queue-proxy to "
                                                     "cap requests per pod)"),
                        "limits.maxBatchSize", max(1, batch // 2)))
    if svc.model.kind == "vision":
        alone = _pixels_that_fit(cfg, svc)
        if (svc.caps.max_image_pixels is None or fit == 0) and alone:
            out.append(Tip.of(f"{why}: cap the image size (larger images are answered 400: resize them on the "
                            f"client); one image of up to {alone:,} pixels fits in one {cfg.node_group.gpu.name}"
                            "'s memory", "limits.maxImagePixels", alone))
    elif svc.caps.max_input_tokens is None:
        out.append(Tip.of(f"{why}: cap the input", "limits.maxInputTokens", 4096))
    return out


def crash_tips(svc: ServiceConfig, v: Verdict) -> list[Tip | str]:
    """502s without a CUDA OOM (those get `oom_tips`)."""
    if crash_cause(v) == "node loss":
        warm = svc.min_replicas + 1
        return [Tip.of(f"errors after the lost node ({errors_seen(v.report)} in replication 0: its in-flight requests "
                     "fail, and the rest wait for a pod on a new node): keep one more pod warm so another node "
                     "still serves", "minReplicas", warm,
                     *([("maxReplicas", warm)] if warm > svc.max_replicas else []))]
    reasons = ", ".join(f"{k} × {n}" for k, n in (v.report.get("restart_reasons") or {}).items())
    return [f"502s from container restarts ({reasons or 'no reason recorded'}): fix what makes the container "
            "exit (see its restart reasons and the plots, --plot DIR); no autoscaling knob prevents them"]


def errors_seen(report: dict) -> str:
    """The report's errors by status code and component (`errors_by_component`), most first: "504 × 40 from the
    activator, 502 × 2 from the queue-proxy"."""
    rows = sorted(((n, code, comp) for code, by in (report.get("errors_by_component") or {}).items()
                   for comp, n in by.items() if n), key=lambda r: (-r[0], r[1], r[2]))
    return ", ".join(f"{code} × {n} from the {comp}" for n, code, comp in rows) or "no errors recorded"

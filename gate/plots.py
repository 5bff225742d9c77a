"""Plots of simulated runs over time, one PNG per service: replicas, queue, errors, GPU memory and latency.

`plot_runs` draws one or more runs of the same service on shared axes (a what-if overlays before, dashed, and
after, solid); `plot_verdicts` draws the gate's runs (replication 0 of each service). Each panel reads the
report's `replica_series` and `timeline` (simulation/timeline.py); the figure's caption names the seed. A run's
warm-up (`warmup_s`, before its measured window: `gate.warmupS`) is shaded on every panel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from validation.errors import InputError, Problem  # noqa: E402

STYLES = ("-",)


def plot_runs(title: str, runs: Sequence[tuple[str, dict]], path: Path) -> Path:
    """`runs`: (label, simulation report dict) pairs; writes `path` and returns it."""
    fig, axes = plt.subplots(5, 1, figsize=(9, 13), sharex=True)
    ax_rep, ax_queue, ax_err, ax_mem, ax_lat = axes
    for (label, report), style in zip(runs, ("--", "-", ":", "-.") if len(runs) > 1 else STYLES):
        series, tl = report["replica_series"], report.get("timeline") or {}
        for key, color in (("ready", "C0"), ("desired", "C1"), ("nodes", "C2")):
            ax_rep.step(series["t"], series[key], style, color=color, where="post", label=f"{key} ({label})")
        if tl:
            ax_rep.step(tl["t"], tl["pending_pods"], style, color="C3", where="post", label=f"Pending pods ({label})")
            ax_queue.step(tl["t"], tl["in_system"], style, color="C0", where="post", label=label)
            for i, (key, row) in enumerate(tl["errors"].items()):
                ax_err.step(tl["bin_start_s"], [k / tl["interval_s"] for k in row], style, color=f"C{i % 10}",
                            where="post", label=f"{key} ({label})")
            ax_mem.step(tl["t"], [m if m is not None else float("nan") for m in tl["gpu_memory"]], style,
                        color="C4", where="post", label=label)
            for key, color, name in (("latency_ok_mean_s", "C0", "mean, successes"),
                                     ("latency_ok_max_s", "C1", "max, successes"),
                                     ("latency_all_mean_s", "C3", "mean, all requests")):
                ax_lat.step(tl["bin_start_s"], [v if v is not None else float("nan") for v in tl[key]], style,
                            color=color, where="post", label=f"{name} ({label})")
    for end, whose in warmups(runs):
        for ax in axes:
            ax.axvspan(0.0, end, color="0.5", alpha=0.12, lw=0, zorder=0,
                       label=f"warm-up, not measured{whose}" if ax is ax_rep else None)
    for ax, ylabel in ((ax_rep, "pods / nodes"), (ax_queue, "requests in system"), (ax_err, "errors / s"),
                       (ax_mem, "GPU memory in use\n(fraction; vLLM: KV blocks)"), (ax_lat, "latency (s)")):
        ax.set_ylabel(ylabel)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(loc="upper right", fontsize="x-small", ncol=2)
    if not ax_err.get_legend_handles_labels()[0]:
        ax_err.text(0.5, 0.5, "no errors", transform=ax_err.transAxes, ha="center")
    ax_lat.set_xlabel("simulated time (s); by arrival of each request's first attempt")
    seeds = ", ".join(f"{label}: seed {report['seed']}" for label, report in runs)
    fig.suptitle(f"{title}\n({seeds})", fontsize="medium")
    fig.tight_layout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
    except OSError as err:
        raise InputError([Problem("--plot", str(path.parent), f"expected a folder to write into ({err})")]) \
            from None
    finally:
        plt.close(fig)
    return path


def warmups(runs: Sequence[tuple[str, dict]]) -> list[tuple[float, str]]:
    """(end of the warm-up, whose) of each distinct warm-up among the runs; whose is "" when every run has it."""
    ends: dict[float, list[str]] = {}
    for label, report in runs:
        end = float(report.get("warmup_s") or 0.0)
        if end > 0:
            ends.setdefault(end, []).append(label)
    return [(end, "" if len(labels) == len(runs) else f" ({', '.join(labels)})")
            for end, labels in sorted(ends.items())]


def plot_verdicts(stack: str, verdicts: list, out: Path) -> list[Path]:
    """One PNG per verdict (`<stack>-<service>[-<scenario>]-timeline.png`): replication 0 of the gate's run."""
    written = []
    for v in verdicts:
        status = "meets" if v.passed else "misses"
        p99 = (v.report.get("latency_s") or {}).get("p99")
        name = v.service if v.scenario == "steady" else f"{v.service}-{v.scenario}"
        title = (f"{stack}/{v.label}: {status} its SLO over {v.replications} replications "
                 f"(replication 0 shown; its p99 {p99:.3g} s)" if p99 is not None else f"{stack}/{v.label}")
        written.append(plot_runs(title, [("gate", v.report)], out / f"{stack}-{name}-timeline.png"))
    return written

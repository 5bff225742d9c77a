"""Replica plots of the gate's simulations: desired vs Ready pods and nodes over time, one PNG per service."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from gate import Verdict  # noqa: E402


def plot_verdicts(stack: str, verdicts: list[Verdict], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for v in verdicts:
        series = v.report["replica_series"]
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for key, style in (("desired", "--"), ("pods", "-"), ("ready", "-"), ("nodes", ":")):
            ax.step(series["t"], series[key], style, where="post", label=key)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("count")
        status = "meets" if v.passed else "misses"
        ax.set_title(f"{stack}/{v.service}: {status} its SLO "
                     f"(p99 {v.report['latency_s'].get('p99', float('nan')):.3g} s)")
        ax.legend(loc="lower right", fontsize="small")
        fig.tight_layout()
        path = out / f"{stack}-{v.service}-replicas.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written

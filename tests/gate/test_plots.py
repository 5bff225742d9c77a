"""The timeline plots shade each run's warm-up, the part before its measured window (`gate.warmupS`)."""

from __future__ import annotations

from pathlib import Path

from gate import plots
from simulation import load_scenario, run_simulation

ROOT = Path(__file__).resolve().parents[2]


def _report(warmup_s: float) -> dict:
    mapping = {"inferenceService": {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                                    "metadata": {"name": "svc"},
                                    "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 2,
                                                           "model": {"modelFormat": {"name": "sklearn"}}}}},
               "workload": {"kind": "poisson", "rate": 2.0}, "server": {"kind": "simple", "base_s": 0.2},
               "duration_s": 300.0, "warmup_s": warmup_s}
    return run_simulation(load_scenario(mapping, base_dir=ROOT), seed=3).to_dict()


def test_warmups_name_whose_when_the_runs_differ():
    runs = [("before", {"warmup_s": 0.0}), ("after", {"warmup_s": 100.0}), ("other", {"warmup_s": 100.0})]
    assert plots.warmups(runs) == [(100.0, " (after, other)")]
    assert plots.warmups([("a", {"warmup_s": 60}), ("b", {"warmup_s": 60})]) == [(60.0, "")]
    assert plots.warmups([("gate", {"warmup_s": 0})]) == [] == plots.warmups([("old report", {})])


def test_every_panel_shades_the_warm_up_and_the_legend_says_whose(tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(plots.plt, "close", figures.append)
    path = plots.plot_runs("svc", [("before", _report(0.0)), ("after", _report(120.0))], tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    [fig] = figures
    axes = fig.axes
    for ax in axes:
        # (x0, x1) in data coordinates, whatever patch class axvspan returns (a Polygon before matplotlib 3.9)
        xs = [ax.transData.inverted().transform(p.get_verts())[:, 0] for p in ax.patches]
        spans = [(round(x.min(), 6), round(x.max(), 6)) for x in xs]
        assert spans == [(0.0, 120.0)], ax.get_ylabel()
    labels = axes[0].get_legend_handles_labels()[1]
    assert "warm-up, not measured (after)" in labels
    assert axes[2].texts[0].get_text() == "no errors"   # the shading is no error series


def test_a_run_without_warm_up_has_no_shading(tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(plots.plt, "close", figures.append)
    plots.plot_runs("svc", [("gate", _report(0.0))], tmp_path / "p.png")
    assert not any(ax.patches for ax in figures[0].axes)

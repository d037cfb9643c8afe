"""The paper's Figure 4 (and figures like it): one metric's means per method, for each ranker and dataset.

The numbers come from ``cells.row_cells``, the same arithmetic as the tables;
the figure's JSON twin records them with the runs behind each bar.
"""
from __future__ import annotations

import io
import json
import os

import matplotlib

matplotlib.use("Agg")   # jobs have no display
from matplotlib import pyplot as plt  # noqa: E402

from ..files import atomic_write  # noqa: E402
from .cells import RunRecord, row_cells  # noqa: E402
from .tables import run_records  # noqa: E402


def build_figure(layout: dict, records: list[RunRecord]) -> dict:
    """Panels of bars (one per ranker × dataset) as the JSON twin the plot is drawn from."""
    metric = layout["metrics"][0]
    columns = [(dataset, metric) for dataset, _ in layout["datasets"]]
    panels = []
    for group in layout["groups"]:
        cells = row_cells(records, group["ranker"], [row["method"] for row in group["rows"]], columns)
        for column, (dataset, label) in enumerate(layout["datasets"]):
            panels.append({"group": group["label"], "dataset": dataset, "dataset_label": label, "bars": [
                {"label": row["label"], **method_cells[column]} for row, method_cells in zip(group["rows"], cells)]})
    return {"name": layout["name"], "caption": layout["caption"], "metric": metric, "panels": panels}


def draw(figure: dict):
    """One bar chart per panel; the whiskers span the lowest to the highest per-seed mean."""
    panels = figure["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4), squeeze=False)
    for axis, panel in zip(axes[0], panels):
        bars = panel["bars"]
        means = [bar["value"] for bar in bars]
        seeds = [list(bar["per_seed"].values()) for bar in bars]
        whiskers = [[m - min(s) for m, s in zip(means, seeds)], [max(s) - m for m, s in zip(means, seeds)]]
        axis.bar(range(len(bars)), means, yerr=whiskers, capsize=3, color=plt.cm.tab10.colors[:len(bars)])
        axis.set_xticks(range(len(bars)), [bar["label"] for bar in bars], rotation=30, ha="right", fontsize=8)
        axis.set_title(f"{panel['group']}, {panel['dataset_label']}", fontsize=9)
        axis.set_ylabel(figure["metric"])
        low = min(m - w for m, w in zip(means, whiskers[0]))
        high = max(m + w for m, w in zip(means, whiskers[1]))
        margin = max(high - low, 1e-3) * 0.5
        axis.set_ylim(max(0.0, low - margin), high + margin)
    fig.tight_layout()
    return fig


def rendered(fig) -> tuple[bytes, bytes]:
    """A matplotlib figure's PDF, without a creation date so that a redraw gives the same bytes (the audit redraws
    figures), and its PNG; the figure is closed."""
    pdf, png = io.BytesIO(), io.BytesIO()
    try:
        fig.savefig(pdf, format="pdf", metadata={"CreationDate": None})
        fig.savefig(png, format="png", dpi=200)
    finally:
        plt.close(fig)
    return pdf.getvalue(), png.getvalue()


def write_figure(figure: dict, pdf_path: str | os.PathLike, png_path: str | os.PathLike,
                 json_path: str | os.PathLike) -> None:
    """PDF and PNG (without creation dates, so reruns give the same bytes) and the JSON twin, atomically."""
    fig = draw(figure)
    with atomic_write(pdf_path, "wb") as handle:
        fig.savefig(handle, format="pdf", metadata={"CreationDate": None})
    with atomic_write(png_path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=200)
    plt.close(fig)
    with atomic_write(json_path) as handle:
        json.dump(figure, handle, indent=2, allow_nan=False)
        handle.write("\n")


def make_figure(layout: dict, metrics: list[str], summaries: list[str], pdf: str, png: str, json_path: str) -> None:
    """The ``figure`` rule: one figure from its runs' metrics and summaries."""
    write_figure(build_figure(layout, run_records(metrics, summaries)), pdf, png, json_path)

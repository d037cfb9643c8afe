"""The paper's Figure 4 (and figures like it): one metric's means per method, for each ranker and dataset.

The numbers come from ``tables.cells_by_row``, the same arithmetic as the
tables; the figure's JSON twin records them with the runs behind each bar.
"""
from __future__ import annotations

import json
import os

import matplotlib

matplotlib.use("Agg")   # jobs have no display
from matplotlib import pyplot as plt  # noqa: E402

from .tables import Group, RunRecord, cells_by_row  # noqa: E402
from .trec import atomic_write  # noqa: E402


def build_figure(name: str, caption: str, groups: list[Group], datasets: list[tuple[str, str]], metric: str,
                 records: list[RunRecord]) -> dict:
    """Panels of bars (one per ranker × dataset) as the JSON twin the plot is drawn from."""
    columns = [(dataset, metric) for dataset, _ in datasets]
    panels = []
    for group in groups:
        cells = cells_by_row(records, group.rows, columns)
        for column, (dataset, label) in enumerate(datasets):
            panels.append({"group": group.label, "dataset": dataset, "dataset_label": label, "bars": [
                {"method": row.method, "label": row.label, **row_cells[column]}
                for row, row_cells in zip(group.rows, cells)]})
    return {"name": name, "caption": caption, "metric": metric, "panels": panels}


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

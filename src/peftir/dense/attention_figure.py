"""Condenser Figure 2: the [CLS] attention entropy per layer, one panel per backbone, as it comes and fine-tuned.

Each point is one layer's entropy from one attention file (``peftir.dense.attention_entropy``): the JSON twin
holds every point with where it comes from (the file, the checkpoint, the sample of passages), the CSV twin the same
points one a row, so a number in the figure can be traced without reading the PDF. The audit
(``peftir.dense.audit``) checks each point against its file and redraws the PDF from the JSON twin.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from .attention_entropy import UNIT
from ..files import atomic_write, write_json

MODELS = (("pretrained", "pre-trained"), ("fine_tuned", "fine-tuned"))      # each panel's lines: key, label
CSV_COLUMNS = ("cell", "panel", "backbone", "model", "layer", "value", "printed", "attention_file", "checkpoint",
               "docs", "passages", "seed", "sample_sha256")


def _points(panel: dict, model: str, path: str) -> list[dict]:
    """One attention file's layers as the figure's points, each with its provenance."""
    found = json.loads(Path(path).read_text())
    sample = found["sample"]
    return [{"cell": f"{panel['backbone']}:{model}:layer{layer}", "panel": panel["label"],
             "backbone": panel["backbone"], "model": model, "layer": layer, "value": value, "printed": f"{value:.4f}",
             "attention_file": path, "checkpoint": found["checkpoint"], "docs": sample["docs"],
             "passages": sample["passages"], "seed": sample["seed"], "sample_sha256": sample["sha256"]}
            for layer, value in enumerate(found["entropy"], 1)]


def build_attention_figure(layout: dict, pretrained: list[str], fine_tuned: list[str]) -> dict:
    """The figure as the JSON twin it is drawn from: per panel (``layout['panels']``, in order) a line of points for
    the backbone as it comes (``pretrained``: one attention file per panel) and one fine-tuned (``fine_tuned``).
    Every file must hold the same sample of passages: otherwise the lines would not be comparable."""
    if not len(pretrained) == len(fine_tuned) == len(layout["panels"]):
        raise ValueError(f"{len(layout['panels'])} panels, but {len(pretrained)} pre-trained and {len(fine_tuned)} "
                         f"fine-tuned attention files")
    panels = [{"label": panel["label"], "backbone": panel["backbone"],
               "lines": [{"model": model, "label": label, "points": _points(panel, model, path)}
                         for (model, label), path in zip(MODELS, files)]}
              for panel, files in zip(layout["panels"], zip(pretrained, fine_tuned))]
    points = figure_points({"panels": panels})
    samples = sorted({point["sample_sha256"] for point in points})
    if len(samples) > 1:
        raise ValueError(f"the attention files hold {len(samples)} different samples of passages "
                         f"({', '.join(sorted({p['attention_file'] for p in points}))}): rerun them with one sample")
    return {"name": layout["name"], "caption": layout["caption"], "unit": UNIT, "dataset": layout["dataset"],
            "passages": points[0]["passages"], "seed": layout["seed"], "sample_sha256": samples[0], "panels": panels}


def figure_points(figure: dict) -> list[dict]:
    """Every number the figure plots, panel by panel, pre-trained before fine-tuned, layer by layer."""
    return [point for panel in figure["panels"] for line in panel["lines"] for point in line["points"]]


def figure_csv(figure: dict) -> str:
    """The CSV twin: one row per point with its provenance (``CSV_COLUMNS``)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({column: point[column] for column in CSV_COLUMNS} for point in figure_points(figure))
    return text.getvalue()


def draw_attention(figure: dict):
    """One panel per backbone, the layers along x: the backbone as it comes dashed, fine-tuned solid (the paper's
    Figure 2 (a)-(c))."""
    import matplotlib

    matplotlib.use("Agg")   # jobs have no display
    from matplotlib import pyplot as plt

    panels = figure["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.0), squeeze=False, sharey=True)
    for axis, panel in zip(axes[0], panels):
        for line, style in zip(panel["lines"], ("--", "-")):
            axis.plot([p["layer"] for p in line["points"]], [p["value"] for p in line["points"]], style, marker="o",
                      markersize=3, label=line["label"])
        axis.set_title(panel["label"], fontsize=9)
        axis.set_xlabel("Layer")
        axis.set_xticks([p["layer"] for p in panel["lines"][0]["points"]])
        axis.legend(fontsize=7)
    axes[0][0].set_ylabel(f"[CLS] attention entropy ({figure['unit']})")
    fig.tight_layout()
    return fig


def drawn(figure: dict) -> tuple[bytes, bytes]:
    """The figure's PDF and PNG, the same bytes on every redraw (``figures.rendered``)."""
    from ..reports.figures import rendered

    return rendered(draw_attention(figure))


def make_attention_figure(layout: dict, pretrained: list[str], fine_tuned: list[str], pdf: str, png: str,
                          json_path: str, csv_path: str) -> None:
    """The ``dense_figure`` rule: the figure (PDF, PNG) and its JSON and CSV twins, each written atomically."""
    figure = build_attention_figure(layout, pretrained, fine_tuned)
    for path, content in zip((pdf, png), drawn(figure)):
        with atomic_write(path, "wb") as handle:
            handle.write(content)
    write_json(json_path, figure)
    with atomic_write(csv_path) as handle:
        handle.write(figure_csv(figure))

"""How the audit checks the Semi-Siamese tables and figure (``peftir.reports.auditor``): a table's LaTeX is the
rendering of its JSON twin, each cell its runs' mean with its per-seed means and its t-test against full FT, each
"Improvement (%)" cell the best of its column against full FT; a figure's PDF the drawing of its JSON twin, each bar
its runs' mean with its per-seed whiskers. A table or figure holds the runs its config asks for (datasets, rows,
folds, seeds), and a trace prints the method, training and backbone params its weights were trained with."""
from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any, Mapping

from ..reports.auditor import Auditor, Audits, ReportCheck, Say, chosen, close, report_of
from ..reports.cells import IMPROVEMENT_ROW, METHOD_ROW, REFERENCE_ROW, improvement_cell
from ..reports.tables import read_table, render_latex
from .contract import BASELINE, PATHS, REFERENCES
from .plan import reference_runs, report_runs


def check_improvements(auditor: Auditor, cells: list[dict], baselines: dict[tuple, dict], table: str) -> None:
    """Each "Improvement (%)" cell is the best of its group's column against full FT's
    (``baselines``: full FT's cell by group, dataset and metric)."""
    for cell in cells:
        if cell["row_kind"] != IMPROVEMENT_ROW:
            continue
        key = (cell["group"], cell["dataset"], cell["metric"])
        baseline = baselines[key]
        column = [c for c in cells if c["row_kind"] == METHOD_ROW and c is not baseline
                  and (c["group"], c["dataset"], c["metric"]) == key]
        expected = improvement_cell(column, baseline)
        if expected["printed"] != cell["printed"] or expected["method"] != cell["method"]:
            auditor.cell = cell["cell"]
            auditor.fail(table, f"the improvement is {expected['printed']} ({expected['method']}), "
                                f"the table prints {cell['printed']} ({cell['method']})")


def table_cells(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None,
                say: Say) -> list[dict] | None:
    """Check every printed number of a table (or the ``cells`` asked for); None for an unknown cell."""
    table_inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
    json_path = next(iter(record["outputs"]["json"]))
    frame = read_table(json_path)
    spec = record["params"]["table"]
    if render_latex(frame, spec["name"], spec["caption"]) != Path(table_path).read_text():
        auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
    every = frame.to_dict(orient="records")
    numbers = [c for c in every if c["row_kind"] != IMPROVEMENT_ROW]
    baselines = {(c["group"], c["dataset"], c["metric"]): c for c in every
                 if c["row_kind"] == METHOD_ROW and c["row"] == BASELINE}
    numbers = chosen(numbers, cells, table_path, say)
    if numbers is None:
        return None
    for cell in numbers:
        auditor.cell = cell["cell"]
        baseline = None if cell["row_kind"] == REFERENCE_ROW or cell["row"] == BASELINE \
            else baselines[(cell["group"], cell["dataset"], cell["metric"])]
        auditor.check_cell(cell, baseline, table_path, table_inputs)
    auditor.cell = "(table)"
    check_improvements(auditor, every, baselines, table_path)
    return numbers


def figure_bars(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                say: Say) -> list[dict] | None:
    """Check every bar of a figure: the mean of its runs' metrics, its per-seed whiskers, and that the PDF is
    the drawing of the JSON twin (drawn again: the figure rule writes it without dates, byte for byte)."""
    import io

    from ..reports.figures import draw

    inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
    json_path = next(iter(record["outputs"]["json"]))
    figure = json.loads(Path(json_path).read_text())
    drawing = draw(figure)
    redrawn = io.BytesIO()
    drawing.savefig(redrawn, format="pdf", metadata={"CreationDate": None})
    if redrawn.getvalue() != Path(pdf_path).read_bytes():
        auditor.fail(pdf_path, f"is not the drawing of {json_path}")
    bars = [{**bar, "cell": f"{panel['group']}:{bar['method']}:{panel['dataset']}:{figure['metric']}",
             "group": panel["group"], "row": bar["method"], "row_kind": METHOD_ROW}
            for panel in figure["panels"] for bar in panel["bars"]]
    if cells:
        bars = [bar for bar in bars if bar["cell"] in cells]
        if not bars:
            say(f"no bar {cells} in {pdf_path}")
            return None
    for bar in bars:
        auditor.cell = bar["cell"]
        auditor.check_cell(bar, None, pdf_path, inputs)
        per_seed: dict[str, list[float]] = {}
        for run in bar["runs"]:
            per_seed.setdefault(str(run["seed"]), []).append(run["value"])
        if any(not close(fmean(values), bar["per_seed"][seed]) for seed, values in per_seed.items()) \
                or set(per_seed) != set(bar["per_seed"]):
            auditor.fail(json_path, f"the per-seed means of bar {bar['cell']} are not its runs'")
    return bars


def underlying(json_path: str, cells: set[str]) -> set[str]:
    """The cells of a Semi-Siamese table behind ``cells``: an "Improvement (%)" cell is derived from its column's
    method cells (the table's audit checks the derivation itself), so those are the cells audited for it."""
    rows = read_table(json_path).to_dict(orient="records")
    derived = {(row["ranker"], row["dataset"], row["metric"]): row["cell"] for row in rows
               if row["row_kind"] == IMPROVEMENT_ROW and row["cell"] in cells}
    return (cells - set(derived.values())) | {row["cell"] for row in rows if row["row_kind"] == METHOD_ROW
                                              and (row["ranker"], row["dataset"], row["metric"]) in derived}


def planned(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The metrics and summaries files (and, for a table, the reference systems' metrics) the config asks of a table
    or figure, and the settings they follow."""
    kind, name = report_of(record)
    found = {"metrics": report_runs(config, kind, name, PATHS.metrics),
             "summaries": report_runs(config, kind, name, PATHS.summary)}
    if kind == "tables":
        found["reference"] = reference_runs(config)
    return found, "experiment.seeds, datasets, folds, rows"


TRAINED_WITH = ("method", "training", "backbone")
AUDITS = Audits(
    reports={"table_tex": ReportCheck("cell", table_cells, planned, table=True, behind=underlying),
             "figure_pdf": ReportCheck("bar", figure_bars, planned)},
    made_from={"metrics": ("run",), "reference_metrics": tuple(REFERENCES.values()), "run": ("weights",),
               "backbone_run": ("bm25_run",), "weights": ("weights", "first_stage_weights")},
    trained={"weights": TRAINED_WITH, "first_stage_weights": TRAINED_WITH})

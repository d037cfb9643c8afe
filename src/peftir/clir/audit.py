"""How the audit checks the modular CLIR tables and figure (``peftir.reports.auditor``): their cells' runs walked back
to the ranking modules, each reranker's two-sided t-test against the pre-ranker rerun (the authors' test), and every
cell rebuilt from the recorded inputs (which runs make it, in which row and column, with which module size). A table
or figure holds the runs its config asks for (language pairs, systems, seeds), and a trace prints the ranking
module's params and the translations a translated run read."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..evaluation import stats
from ..reports.auditor import (Auditor, Audits, ReportCheck, Say, check_runs, check_star, chosen, compare_cells,
                               rebuilt, report_of)
from ..reports.cells import METHOD_ROW, REFERENCE_ROW
from ..reports.tables import read_table
from . import reports
from .plan import clir_report_runs


def table_cells(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None,
                say: Say) -> list[dict] | None:
    """Check every printed number of a modular CLIR table (or the ``cells`` asked for): the LaTeX is the
    rendering of its JSON twin, each cell its runs' mean, each reranker's star the authors' test against the
    pre-ranker in its column (whose cell is checked too), and each cell the one its inputs and layout give."""
    json_path = next(iter(record["outputs"]["json"]))
    frame = read_table(json_path)
    spec = record["params"]["clir_table"]
    if reports.render_clir_latex(frame, spec) != Path(table_path).read_text():
        auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
    every = frame.to_dict(orient="records")
    prerank = {c["dataset"]: c for c in every if c["row_kind"] == REFERENCE_ROW}
    numbers = chosen(every, cells, table_path, say)
    if numbers is None:
        return None
    columns = {c["dataset"] for c in numbers}
    needed = numbers + [c for column, c in prerank.items() if column in columns and c not in numbers]
    check_runs(auditor, [c for c in needed if c["runs"]], table_path, record)   # "-": NMT + BM25 without translations
    for cell in numbers:
        if cell["row_kind"] == METHOD_ROW:
            baseline = prerank[cell["dataset"]]
            check_star(auditor, cell, baseline, table_path,
                       stats.ttest_two_sided(reports.pooled(cell), reports.pooled(baseline)), "two-sided t-test")
    translated = list(record["inputs"].get("translated", {}))
    made = rebuilt(auditor, record, table_path, lambda *files: reports.clir_cells(spec, *files, translated))
    compare_cells(auditor, needed, made, json_path, complete=not cells)
    return numbers


def figure_points(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                  say: Say) -> list[dict] | None:
    """Check every point of a modular CLIR figure (or the ``cells`` asked for) as ``table_cells`` does a
    table's cells, and that the PDF is the drawing of its JSON twin (drawn again, byte for byte)."""
    json_path = next(iter(record["outputs"]["json"]))
    figure = json.loads(Path(json_path).read_text())
    if reports.drawn(figure)[0] != Path(pdf_path).read_bytes():
        auditor.fail(pdf_path, f"is not the drawing of {json_path}")
    numbers = chosen(reports.figure_points(figure), cells, pdf_path, say)
    if numbers is None:
        return None
    check_runs(auditor, numbers, pdf_path, record)
    made = rebuilt(auditor, record, pdf_path, lambda *files: reports.build_clir_figure(record["params"]["clir_figure"],
                                                                                     *files))
    compare_cells(auditor, numbers, reports.figure_points(made), json_path, complete=not cells)
    if not cells and figure != made:
        auditor.cell = "(figure)"
        auditor.fail(json_path, "is not the figure its recorded inputs and layout give (lines, labels, factors)")
    return numbers


def planned(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The runs' files the config asks of a table or figure, by input name, and the settings they follow."""
    kind, name = report_of(record)
    return clir_report_runs(config, kind, name), f"modular_clir.ranking.seeds, {kind}.{name}'s pairs, systems"


AUDITS = Audits(
    reports={"clir_table_tex": ReportCheck("cell", table_cells, planned, table=True),
             "clir_figure_pdf": ReportCheck("point", figure_points, planned)},
    made_from={"clir_metrics": ("clir_run",), "clir_prerank_metrics": ("clir_prerank",),
               "clir_translated_metrics": ("clir_translated_run",), "clir_run": ("ranking_module",)},
    trained={"ranking_module": ("ranking_module",)})

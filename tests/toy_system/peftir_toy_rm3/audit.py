"""How ``peftir audit`` checks its table, on the audit's shared checks (``peftir.reports.auditor``): the LaTeX is the
rendering of its JSON twin; each cell the mean of its metrics files, each re-hashed back to the BM25 or RM3 run and
recomputed with ir_measures; RM3's star the paired t-test against BM25's cell; every cell the one its recorded inputs
and layout give; the table holds the folds the config asks for."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from peftir.reports.auditor import (Auditor, Audits, ReportCheck, Say, check_runs, check_star, chosen, compare_cells,
                                    rebuilt)
from peftir.reports.retrieval_tables import paired_p, paired_values
from peftir.reports.tables import read_table

from .plan import table_input
from .table import render, table_cells


def check_table(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None, say: Say
                ) -> list[dict] | None:
    """Every printed number of the table (or the ``cells`` asked for), and the baselines their stars stand on."""
    json_path = next(iter(record["outputs"]["json"]))
    frame, layout = read_table(json_path), record["params"]["toy_rm3_table"]
    if render(frame, layout) != Path(table_path).read_text():
        auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
    every = frame.to_dict(orient="records")
    by_id = {cell["cell"]: cell for cell in every}
    numbers = chosen(every, cells, table_path, say)
    if numbers is None:
        return None
    baselines = {cell["cell"]: by_id[cell["ttest"]["against"]] for cell in numbers if cell.get("ttest")}
    needed = numbers + [cell for cell in baselines.values() if cell not in numbers]
    check_runs(auditor, needed, table_path, record)
    for cell in numbers:
        if cell.get("ttest"):
            baseline = baselines[cell["cell"]]
            check_star(auditor, cell, baseline, table_path, paired_p(*paired_values(cell, baseline)), "paired t-test")
    made = rebuilt(auditor, record, table_path, lambda metrics, _, __: table_cells(layout, metrics))
    compare_cells(auditor, needed, made, json_path, complete=not cells)
    return numbers


def planned(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The metrics files the config asks of a table, and the settings they follow."""
    return table_input(config, record["wildcards"]["table"]), "toy_rm3.dataset and its folds"


AUDITS = Audits(reports={"toy_table_tex": ReportCheck("cell", check_table, planned, table=True)},
                made_from={"toy_rm3_metrics": ("toy_rm3_run",), "toy_rm3_run": ("index",),
                           "toy_bm25_metrics": ("bm25_run",)},
                evaluations={"toy_rm3_metrics": "metrics"})

"""Its table: BM25 and BM25 + RM3 (rows) by metric (columns) on one collection, each cell the mean over the folds'
test queries of its metrics files, RM3's starred by a paired two-sided t-test against BM25 over (fold, query)."""
from __future__ import annotations

from statistics import fmean

import pandas as pd

from peftir.evaluation.stats import star
from peftir.reports.cells import METHOD_ROW, REFERENCE_ROW, ROUNDING, MetricFiles, json_p, printed
from peftir.reports.retrieval_tables import paired_p, paired_values
from peftir.reports.tables import render_latex, write_table

from .plan import ROWS, cell_id

BASELINE = "bm25"
TTEST = "paired two-sided t-test (scipy.stats.ttest_rel) of per-query values against BM25's, paired by (fold, query)"
NOTE = r"$^{*}p \le 0.05$, paired two-sided t-test of per-query values against BM25"
ROW_TITLE = "Retrieval"


def _row_files(layout: dict, metrics: list[str]) -> dict[str, list[str]]:
    """Each row's metrics files, one per fold in fold order; other files, or a missing one, are a ValueError."""
    found = {row: [pattern.format(dataset=layout["dataset"], fold=fold) for fold in layout["folds"]]
             for row, (_, pattern) in ROWS.items()}
    expected = [path for paths in found.values() for path in paths]
    if sorted(metrics) != sorted(expected):
        raise ValueError(f"{layout['name']} reads {sorted(expected)}, not {sorted(metrics)}")
    return found


def _cell(layout: dict, row: str, metric: str, paths: list[str], files: MetricFiles) -> dict:
    values = [files.mean(path, metric) for path in paths]
    mean = fmean(values)
    return {"cell": cell_id(row, metric), "row_kind": REFERENCE_ROW if row == BASELINE else METHOD_ROW, "group": "",
            "ranker": "", "row": row, "label": ROWS[row][0], "trainable_parameters": None, "printed_parameters": "-",
            "dataset": layout["dataset"], "dataset_label": layout["dataset"], "metric": metric, "method": row,
            "value": mean, "printed": printed(mean), "stars": "", "p_value": None, "rounding": ROUNDING,
            "per_seed": None, "ttest": None, "candidates": None, "note": None, "collection": layout["dataset"],
            "runs": [{"fold": fold, "metrics_file": path, "value": value, "per_query": files.per_query(path, metric)}
                     for fold, path, value in zip(layout["folds"], paths, values)]}


def table_cells(layout: dict, metrics: list[str]) -> list[dict]:
    """Every printed number in print order (row by row, metric by metric), RM3's tested against BM25's."""
    by_row, files = _row_files(layout, metrics), MetricFiles()
    cells = {(row, metric): _cell(layout, row, metric, by_row[row], files) for row in ROWS
             for metric in layout["metrics"]}
    for (row, metric), cell in cells.items():
        if row != BASELINE:
            baseline = cells[BASELINE, metric]
            p = json_p(paired_p(*paired_values(cell, baseline)))
            cell.update(p_value=p, stars=star(p), ttest={"test": TTEST, "against": baseline["cell"], "p_value": p,
                                                         "n": len(paired_values(cell, baseline)[0])})
    return list(cells.values())


def render(frame: pd.DataFrame, layout: dict) -> str:
    """The table's LaTeX, from its cells (the JSON twin's, for the audit)."""
    return render_latex(frame, layout["name"], layout["caption"], NOTE, ROW_TITLE)


def make_table(layout: dict, metrics: list[str], tex: str, json_path: str, csv: str) -> None:
    """The ``toy_rm3_table`` rule: the table as LaTeX, its JSON twin and a CSV."""
    frame = pd.DataFrame(table_cells(layout, metrics), dtype=object)
    write_table(frame, layout["name"], layout["caption"], tex, json_path, csv, NOTE, ROW_TITLE)

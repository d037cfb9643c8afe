"""How ``peftir audit`` checks its table, on the audit's shared checks (``peftir.reports.auditor``): the LaTeX is the
rendering of its JSON twin; each cell the mean of its metrics files, each re-hashed back to the BM25 or RM3 run and
recomputed with ir_measures; RM3's star the paired t-test against BM25's cell; every cell the one its recorded inputs
and layout give; the table holds the folds the config asks for."""
from __future__ import annotations

from typing import Any, Mapping

from peftir.reports.auditor import Audits, ReportCheck, paired_table_check

from .plan import table_input
from .table import render, table_cells

# the shared check of a table of paired-tested cells (LaTeX, runs re-hashed and recomputed, stars, rebuilt cells)
check_table = paired_table_check("toy_rm3_table", render,
                                 lambda layout, metrics, _summaries, _artefacts: table_cells(layout, metrics))


def planned(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The metrics files the config asks of a table, and the settings they follow."""
    return table_input(config, record["wildcards"]["table"]), "toy_rm3.dataset and its folds"


AUDITS = Audits(reports={"toy_table_tex": ReportCheck("cell", check_table, planned, table=True)},
                made_from={"toy_rm3_metrics": ("toy_rm3_run",), "toy_rm3_run": ("index",),
                           "toy_bm25_metrics": ("bm25_run",)},
                evaluations={"toy_rm3_metrics": "metrics"})

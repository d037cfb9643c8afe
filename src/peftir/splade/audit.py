"""How the audit checks the Adapters-SPLADE tables (``peftir.reports.auditor``): as every first-stage retrieval table
is checked (``retrieval_table_check``), each cell's runs walked back through the index to the trained SPLADE model (or
through the reranking to the trained cross-encoder), its R-FLOPS recomputed from the per-query FLOPS its search
recorded. A table holds the runs its config asks for (folds, seeds, the table's layout)."""
from __future__ import annotations

from typing import Any, Mapping

from ..reports.auditor import Audits, ReportCheck, retrieval_table_check
from .plan import splade_report_runs


def planned(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The metrics and summaries files the config asks of a table, and the settings they follow."""
    name = record["wildcards"]["table"]
    return splade_report_runs(config, name), f"sparse_retrieval.folds, seeds, tables.{name}"


AUDITS = Audits(
    reports={"splade_table_tex": ReportCheck("cell", retrieval_table_check("splade_table"), planned, table=True)},
    made_from={"splade_metrics": ("splade_run",), "splade_run": ("splade_index",), "splade_index": ("splade_model",),
               "splade_bm25_metrics": ("bm25_run",), "splade_model": ("pretrained", "pretraining_mlm_backbone"),
               "reranked_metrics": ("reranked_run",), "reranked_run": ("reranker_model",)},
    trained={"splade_model": (), "reranker_model": ()})

"""How a table cell is named: the id the audit's ``--cell`` takes, a reported file maps a printed number to and a
scorecard compares by. Known from a table's layout before any job runs."""
from __future__ import annotations

from typing import Mapping

IMPROVEMENT = "improvement"     # the row id of a ranker's "Improvement (%)" row


def cell_id(ranker: str, row: str, dataset: str, metric: str) -> str:
    """A ranked table's cell: ``ranker:row:dataset:metric`` (a row without a ranker, a reference system's or a CLIR
    system's: ``system:dataset:metric``, e.g. ``bm25:vaswani:P@20``)."""
    return ":".join([ranker, row, dataset, metric] if ranker else [row, dataset, metric])


def retrieval_cell_id(row: Mapping[str, str], column: Mapping[str, str]) -> str:
    """A retrieval table's cell: ``row label | column label`` (``FT | MRR@10``)."""
    return f"{row['label']} | {column['label']}"


def split_cell_id(cell: str) -> tuple[str, str]:
    """A cell id's row and column: ``twinbert:lora:vaswani:P@20`` → (``twinbert:lora``, ``vaswani:P@20``),
    ``bm25:vaswani:P@20`` → (``bm25``, ``vaswani:P@20``), ``FT | MRR@10`` → (``FT``, ``MRR@10``)."""
    if " | " in cell:
        row, column = cell.split(" | ", 1)
        return row, column
    parts = cell.split(":")
    return ":".join(parts[:-2]), ":".join(parts[-2:])

"""The Semi-Siamese system's tables (Tables 3-7): the reference rows' metrics files read from their paths, and the
``table`` rule's job."""
from __future__ import annotations

from ..reports.tables import run_records, table_frame, write_table
from .contract import ARTEFACTS


def reference_files(metrics_files: list[str]) -> dict[str, dict[str, list[str]]]:
    """The reference rows' per-fold metrics files by system and dataset (read from their paths)."""
    found: dict[str, dict[str, list[str]]] = {}
    for path in metrics_files:
        kind = ARTEFACTS.match(path)
        if kind is None or kind[0] != "reference_metrics":
            raise ValueError(f"{path} is not a reference system's metrics file")
        found.setdefault(kind[1]["reference"], {}).setdefault(kind[1]["dataset"], []).append(path)
    return found


def make_table(layout: dict, metrics: list[str], summaries: list[str], reference: list[str], tex: str, json_path: str,
               csv_path: str) -> None:
    """The ``table`` rule: one result table from its runs' metrics and summaries and the reference systems'."""
    frame = table_frame(layout, run_records(metrics, summaries), reference_files(reference))
    write_table(frame, layout["name"], layout["caption"], tex, json_path, csv_path)

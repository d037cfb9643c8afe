"""Planning the system's jobs from the config alone: the collection it reads, its tables and their cells, and the
metrics files a table reads."""
from __future__ import annotations

from typing import Any, Mapping

from .contract import PAPER, PATHS, table_layout

Config = Mapping[str, Any]
ROWS = {"bm25": ("BM25", PATHS.toy_bm25_metrics), "rm3": ("BM25 + RM3", PATHS.toy_rm3_metrics)}   # in print order


def table_names(config: Config) -> list[str]:
    """Its tables' names; none without a ``toy_rm3`` section."""
    return list((config.get("toy_rm3") or {}).get("tables") or {})


def datasets(config: Config) -> list[str]:
    """The collection its jobs read."""
    return [config["toy_rm3"]["dataset"]] if config.get("toy_rm3") else []


def cell_id(row: str, metric: str) -> str:
    return f"{row}/{metric}"


def table_input(config: Config, name: str) -> dict[str, list[str]]:
    """The metrics files a table reads: each row's, one per fold, rows in print order."""
    layout = table_layout(config, name)
    return {"metrics": [pattern.format(dataset=layout["dataset"], fold=fold) for _, pattern in ROWS.values()
                        for fold in layout["folds"]]}


def report_files(config: Config) -> dict[str, str]:
    """Every table's .tex by its crate name (``toy-rm3/table1``)."""
    return {f"{PAPER}/{name}": PATHS.toy_table_tex.format(table=name) for name in table_names(config)}


def report_cells(config: Config) -> dict[str, list[str]]:
    """Every cell id of every table, by its crate name, before any job runs."""
    return {f"{PAPER}/{name}": [cell_id(row, metric) for row in ROWS for metric in config["toy_rm3"]["metrics"]]
            for name in table_names(config)}

"""The layout of a retrieval table, which the dense and SPLADE systems share: rows and columns whose cells name a
trained retriever (or a reference system) and the collection it searched."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .cells import retrieval_cell_id


def retrieval_layout(section: dict, spec: dict, name: str, folds_of: Callable[[str], list[str]]) -> dict:
    """A retrieval table's layout: its rows (the table's defaults under each), columns, baseline, seeds and the
    folds of each dataset its cells train on or search."""
    defaults = {"dataset": section["dataset"], **spec.get("defaults", {})}
    rows = [{**defaults, **row} for row in spec["rows"]]
    named = {cell[key] for row in rows for column in spec["columns"] for cell in [retrieval_cell(row, column)]
             for key in ("dataset", "target") if key in cell}
    return {"name": name, "caption": spec["caption"], "baseline": spec.get("baseline"),
            "columns": [{"label": column["label"], **{k: v for k, v in column.items() if k != "label"}}
                        for column in spec["columns"]],
            "rows": rows, "folds": {dataset: folds_of(dataset) for dataset in sorted(named)},
            "seeds": list(section["seeds"])}


def retrieval_cell(row: Mapping[str, Any], column: Mapping[str, Any]) -> dict:
    """A dense table cell's settings: its row's, with its column's (but the label) on top."""
    return {**row, **{key: value for key, value in column.items() if key != "label"}}


def searched_collection(cell: Mapping[str, Any]) -> str:
    """The collection a table cell's retriever searches: its ``target`` (SPLADE's zero-shot and TREC DL columns),
    else the dataset it trained on."""
    return cell.get("target", cell["dataset"])


def retrieval_cell_ids(layout: Mapping[str, Any]) -> list[str]:
    """Every cell id of a retrieval table with this layout, row by row, as its table names them."""
    return [retrieval_cell_id(row, column) for row in layout["rows"] for column in layout["columns"]]

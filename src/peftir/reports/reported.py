"""What a paper printed, as data: ``config/reported/<paper>.yaml``, one file per paper.

Per table the pipeline builds: every number the paper prints in it, as printed and in the pipeline's units, with its
place in the paper (row and column as the paper labels them) and the pipeline cell it is (``peftir.contract.cells``'
ids, those of the paper configuration); the printed numbers that have no pipeline cell, each with why; the row the
paper compares against. Also the paper's figures the pipeline builds and the tables and figures it does not, with
why. A scorecard (``peftir.reports.scorecard``) compares a rebuilt table with it; ``check_cells`` holds the file to
the cells a configuration builds, so a reported number can neither name a cell that does not exist nor be dropped
without a word.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from ..contract.cells import split_cell_id
from ..errors import ActionableError

TOP_KEYS = {"paper", "source", "configuration", "tables", "figures", "not_built"}
TABLE_KEYS = {"place", "caption", "baseline", "row_baselines", "cells", "parameters", "without_counterpart",
              "substitutions"}
SUBSTITUTION_KEYS = {"kind", "what", "rows", "columns"}
# what a reproduced cell can stand in for, beside the stand-in datasets the scorecard knows (``reproduction.stand_ins``)
SUBSTITUTION_KINDS = ("collection", "split", "model", "budget")
CELL_KEYS = {"cell", "printed", "value", "marks", "row", "column", "note"}
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)      # libyaml's, where PyYAML has it: 10× faster
DASH = "-"      # printed where a table has no number (no method beats the baseline): its value is null


class ReportedError(ActionableError):
    """A reported file that does not hold what its format says (the message names the file and the key)."""


@dataclass(frozen=True)
class ReportedCell:
    """One printed number: the pipeline cell it is, as printed, in the pipeline's units, and where it stands."""

    cell: str
    printed: str
    value: float | None       # None: the paper prints a dash
    marks: str
    row: str
    column: str
    note: str = ""


@dataclass(frozen=True)
class Substitution:
    """What the built cells of ``rows`` × ``columns`` (pipeline ids; all when empty) score in place of the paper's:
    another ``kind`` of thing, said in ``what`` ("NQ dev for the paper's NQ test")."""
    kind: str
    what: str
    rows: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()

    def applies(self, cell: str) -> bool:
        row, column = split_cell_id(cell)
        return (not self.rows or row in self.rows) and (not self.columns or column in self.columns)


@dataclass(frozen=True)
class ReportedTable:
    """One table's printed numbers; ``baseline``: the row the paper compares against (None: it compares nothing)."""

    name: str
    place: str
    caption: str
    baseline: str | None
    cells: tuple[ReportedCell, ...]
    parameters: Mapping[str, str]
    without_counterpart: tuple[Mapping[str, str], ...]
    substitutions: tuple[Substitution, ...] = ()
    row_baselines: Mapping[str, str] = field(default_factory=dict)   # rows the paper compares with another row


@dataclass(frozen=True)
class Reported:
    """A paper's reported file."""

    path: str
    paper: str
    source: str
    configuration: str
    tables: Mapping[str, ReportedTable]
    figures: Mapping[str, Mapping[str, str]]
    not_built: tuple[Mapping[str, str], ...]


def _unknown(path: str, where: str, given: Mapping, allowed: set[str], required: set[str]) -> None:
    extra, missing = sorted(set(given) - allowed), sorted(required - set(given))
    if extra:
        raise ReportedError(f"{path}: {where}: unknown key(s) {', '.join(extra)}; "
                            f"allowed: {', '.join(sorted(allowed))}")
    if missing:
        raise ReportedError(f"{path}: {where}: missing key(s) {', '.join(missing)}")


def _cell(path: str, where: str, entry: Any) -> ReportedCell:
    if not isinstance(entry, dict):
        raise ReportedError(f"{path}: {where}: a cell is a mapping with keys {', '.join(sorted(CELL_KEYS))}")
    _unknown(path, where, entry, CELL_KEYS, CELL_KEYS - {"marks", "note"})
    value, printed = entry["value"], str(entry["printed"])
    if value is None and printed == DASH:
        pass
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReportedError(f"{path}: {where} ({entry['cell']}): value = {value!r}: a finite number in the "
                            f"pipeline's units (null only where the paper prints {DASH!r})")
    return ReportedCell(cell=str(entry["cell"]), printed=printed, value=None if value is None else float(value),
                        marks=str(entry.get("marks") or ""), row=str(entry["row"]), column=str(entry["column"]),
                        note=str(entry.get("note") or ""))


def _table(path: str, name: str, spec: Any) -> ReportedTable:
    where = f"tables.{name}"
    if not isinstance(spec, dict):
        raise ReportedError(f"{path}: {where}: a mapping with keys {', '.join(sorted(TABLE_KEYS))}")
    _unknown(path, where, spec, TABLE_KEYS, {"place", "cells"})
    cells = tuple(_cell(path, f"{where}.cells[{i}]", entry) for i, entry in enumerate(spec["cells"] or []))
    seen: set[str] = set()
    for cell in cells:
        if cell.cell in seen:
            raise ReportedError(f"{path}: {where}: cell {cell.cell!r} given twice")
        seen.add(cell.cell)
    parameters = {str(entry["row"]): str(entry["printed"]) for entry in spec.get("parameters") or []}
    without = tuple(spec.get("without_counterpart") or [])
    for i, entry in enumerate(without):
        if not isinstance(entry, dict) or not str(entry.get("why") or "").strip():
            raise ReportedError(f"{path}: {where}.without_counterpart[{i}]: a printed number without a pipeline "
                                f"cell needs its `why`")
    rows = {split_cell_id(cell.cell)[0] for cell in cells}
    for row, against in (spec.get("row_baselines") or {}).items():
        if str(row) not in rows or str(against) not in rows:
            raise ReportedError(f"{path}: {where}.row_baselines: {row!r} -> {against!r}: both must be rows of the "
                                f"table's cells ({', '.join(sorted(rows))})")
    return ReportedTable(name=name, place=str(spec["place"]), caption=str(spec.get("caption") or ""),
                         baseline=None if spec.get("baseline") is None else str(spec["baseline"]), cells=cells,
                         parameters=parameters, without_counterpart=without,
                         row_baselines=MappingProxyType({str(row): str(against) for row, against
                                                         in (spec.get("row_baselines") or {}).items()}),
                         substitutions=tuple(_substitution(path, f"{where}.substitutions[{i}]", entry)
                                             for i, entry in enumerate(spec.get("substitutions") or [])))


def _substitution(path: str, where: str, entry: Any) -> Substitution:
    if not isinstance(entry, dict):
        raise ReportedError(f"{path}: {where}: a mapping with keys {', '.join(sorted(SUBSTITUTION_KEYS))}")
    _unknown(path, where, entry, SUBSTITUTION_KEYS, {"kind", "what"})
    if entry["kind"] not in SUBSTITUTION_KINDS:
        raise ReportedError(f"{path}: {where}.kind = {entry['kind']!r}: allowed: {', '.join(SUBSTITUTION_KINDS)}")
    if not str(entry["what"]).strip():
        raise ReportedError(f"{path}: {where}.what: say what the build scores in place of the paper's")
    return Substitution(str(entry["kind"]), str(entry["what"]), tuple(map(str, entry.get("rows") or ())),
                        tuple(map(str, entry.get("columns") or ())))


def load_reported(path: str | Path) -> Reported:
    """A reported file, checked: no unknown key, every cell a finite value, no cell twice, every number left
    without a pipeline cell given a reason."""
    path = str(path)
    try:
        document = yaml.load(Path(path).read_text(), Loader=LOADER)
    except FileNotFoundError:
        raise ReportedError(f"{path}: no such reported file (config/reported/<paper>.yaml: what the paper printed)")
    except yaml.YAMLError as error:
        raise ReportedError(f"{path}: not YAML: {error}")
    if not isinstance(document, dict):
        raise ReportedError(f"{path}: a mapping with keys {', '.join(sorted(TOP_KEYS))}")
    _unknown(path, "(top level)", document, TOP_KEYS, {"paper", "source", "configuration", "tables"})
    tables = {str(name): _table(path, str(name), spec) for name, spec in (document["tables"] or {}).items()}
    return Reported(path=path, paper=str(document["paper"]), source=str(document["source"]),
                    configuration=str(document["configuration"]), tables=tables,
                    figures={str(k): v for k, v in (document.get("figures") or {}).items()},
                    not_built=tuple(document.get("not_built") or []))


def check_cells(reported: Reported, built: Mapping[str, list[str]]) -> None:
    """Every reported table is one the configuration builds (``built``: its cell ids by table name) and every cell
    it names is one of that table's cells; a ReportedError names the file, the table and the cell otherwise."""
    for name, table in reported.tables.items():
        if name not in built:
            raise ReportedError(f"{reported.path}: tables.{name}: not a table {reported.configuration} builds "
                                f"(it builds: {', '.join(built) or 'none'})")
        known = set(built[name])
        for cell in table.cells:
            if cell.cell not in known:
                raise ReportedError(f"{reported.path}: tables.{name}: cell {cell.cell!r} ({cell.row} / "
                                    f"{cell.column}) is not a cell of the built table")

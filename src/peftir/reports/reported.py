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
              "substitutions", "test", "collection", "equivalence"}
# what a paper says of the significance of a table's numbers: a test with its marks, no test, or a test whose marks
# this file does not hold (the project's copy of the paper lost them)
PRINTED, NONE_PRINTED, NOT_TRANSCRIBED = "printed", "none printed", "not transcribed"
TEST_KEYS = {"status", "test", "samples", "paired", "tails", "marks", "correction", "source"}
SAMPLES = ("seeds", "queries")          # what the paper's test compares: per-seed means, or per-query scores
LETTERS = "letters"                     # marks that name the rows a cell is significantly better than (SPLADE)
EQUIVALENCE_KEYS = {"rows", "against", "columns", "margin", "reason", "claim"}
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
class PaperTest:
    """The significance test a paper ran for a table, as its text and notes say (``status`` printed), or that it
    prints none, or that it tested but its marks are not transcribed here. ``marks``: each mark with its alpha (a
    star "*" at 0.05), or ``{"letters": alpha}`` for marks naming the rows a cell is better than; ``tails`` 1: in the
    paper's direction, better than the baseline; ``samples``: per-seed means or per-query scores."""
    status: str
    test: str = ""
    samples: str = ""
    paired: bool = False
    tails: int = 2
    marks: Mapping[str, float] = field(default_factory=dict)
    correction: str = "none"
    source: str = ""

    @property
    def alpha(self) -> float:
        """The level of the paper's weakest mark: what "significant" means in its table."""
        return max(self.marks.values())

    @property
    def letters(self) -> bool:
        return LETTERS in self.marks

    def words(self) -> str:
        """The test in a few words, for a caption."""
        if self.status != PRINTED:
            return self.test or self.status
        tails = "one-tailed (better than the baseline)" if self.tails == 1 else "two-tailed"
        levels = ", ".join(f"{mark} p <= {alpha:g}" for mark, alpha in self.marks.items())
        return (f"{self.test}, {'paired' if self.paired else 'unpaired'}, on per-{self.samples[:-1]} "
                f"{'means' if self.samples == 'seeds' else 'scores'}, {tails}, {levels}, correction: {self.correction}")


NO_TEST = PaperTest(NONE_PRINTED)


@dataclass(frozen=True)
class EquivalenceClaim:
    """A paper's claim that method ``rows`` match the row ``against`` (adapters vs fine-tuning): tested as an
    equivalence (TOST) at ``margin``, in the measure's units, over ``columns`` (pipeline column ids; every shared
    effectiveness column when empty); ``reason`` says why that margin, ``claim`` quotes the paper."""
    rows: tuple[str, ...]
    against: str
    margin: float
    reason: str
    claim: str
    columns: tuple[str, ...] = ()


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
    test: PaperTest = NO_TEST
    collection: Mapping[str, str] = field(default_factory=dict)      # column id → the paper's collection ("": all)
    equivalence: tuple[EquivalenceClaim, ...] = ()

    def collection_of(self, column: str) -> str | None:
        """The collection (a pipeline dataset name) the paper's cells of ``column`` score, where the file says."""
        return self.collection.get(column, self.collection.get(""))


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
    row_baselines = _row_baselines(path, f"{where}.row_baselines", spec.get("row_baselines") or {}, rows)
    return ReportedTable(name=name, place=str(spec["place"]), caption=str(spec.get("caption") or ""),
                         baseline=None if spec.get("baseline") is None else str(spec["baseline"]), cells=cells,
                         parameters=parameters, without_counterpart=without,
                         row_baselines=MappingProxyType(row_baselines),
                         substitutions=tuple(_substitution(path, f"{where}.substitutions[{i}]", entry)
                                             for i, entry in enumerate(spec.get("substitutions") or [])),
                         test=_test(path, f"{where}.test", spec.get("test")),
                         collection=MappingProxyType(_collection(path, f"{where}.collection",
                                                                 spec.get("collection"))),
                         equivalence=tuple(_claim(path, f"{where}.equivalence[{i}]", entry, rows)
                                           for i, entry in enumerate(spec.get("equivalence") or [])))


def _row_baselines(path: str, where: str, given: Any, rows: set[str]) -> dict[str, str]:
    """Rows the paper compares with another row than the table's baseline: ``{row: {against, cites}}``, each citing
    the paper's sentence that makes the comparison."""
    if not isinstance(given, dict):
        raise ReportedError(f"{path}: {where}: a mapping of row -> {{against, cites}}")
    found = {}
    for row, entry in given.items():
        if not isinstance(entry, dict) or set(entry) != {"against", "cites"} or not str(entry["cites"]).strip():
            raise ReportedError(f"{path}: {where}.{row}: a mapping with `against` (the row it is compared with) and "
                                f"`cites` (the paper's sentence that compares them)")
        if str(row) not in rows or str(entry["against"]) not in rows:
            raise ReportedError(f"{path}: {where}: {row!r} -> {entry['against']!r}: both must be rows of the "
                                f"table's cells ({', '.join(sorted(rows))})")
        found[str(row)] = str(entry["against"])
    return found


def _test(path: str, where: str, entry: Any) -> PaperTest:
    """A table's ``test`` block: required, so that what the paper tested is said rather than read from its marks."""
    if not isinstance(entry, dict):
        raise ReportedError(f"{path}: {where}: missing; say what the paper tested (status: {PRINTED}, "
                            f"{NONE_PRINTED} or {NOT_TRANSCRIBED}, with its source)")
    status = entry.get("status")
    if status not in (PRINTED, NONE_PRINTED, NOT_TRANSCRIBED):
        raise ReportedError(f"{path}: {where}.status = {status!r}: allowed: {PRINTED}, {NONE_PRINTED}, "
                            f"{NOT_TRANSCRIBED}")
    required = TEST_KEYS if status == PRINTED else ({"status", "test", "source"} if status == NOT_TRANSCRIBED
                                                    else {"status", "source"})
    _unknown(path, where, entry, TEST_KEYS, required)
    if not str(entry["source"]).strip():
        raise ReportedError(f"{path}: {where}.source: quote where the paper says it")
    if status != PRINTED:
        return PaperTest(status, test=str(entry.get("test") or ""), source=str(entry["source"]))
    marks = entry["marks"]
    if (entry["samples"] not in SAMPLES or entry["tails"] not in (1, 2) or not isinstance(entry["paired"], bool)
            or not isinstance(marks, dict) or not marks
            or not all(isinstance(alpha, float) and 0 < alpha < 1 for alpha in marks.values())):
        raise ReportedError(f"{path}: {where}: samples one of {', '.join(SAMPLES)}, tails 1 or 2, paired true or "
                            f"false, marks a mapping of each mark (or {LETTERS!r}) to its alpha in (0, 1)")
    return PaperTest(PRINTED, str(entry["test"]), entry["samples"], entry["paired"], entry["tails"],
                     MappingProxyType({str(mark): float(alpha) for mark, alpha in marks.items()}),
                     str(entry["correction"]), str(entry["source"]))


def _collection(path: str, where: str, entry: Any) -> dict[str, str]:
    """The collection the paper's numbers score: a pipeline dataset name for every column, or column id → name."""
    if entry is None:
        return {}
    if isinstance(entry, str):
        return {"": entry}
    if not isinstance(entry, dict) or not all(isinstance(value, str) for value in entry.values()):
        raise ReportedError(f"{path}: {where}: a dataset name, or a mapping of column id -> dataset name")
    return {str(column): value for column, value in entry.items()}


def _claim(path: str, where: str, entry: Any, rows: set[str]) -> EquivalenceClaim:
    if not isinstance(entry, dict):
        raise ReportedError(f"{path}: {where}: a mapping with keys {', '.join(sorted(EQUIVALENCE_KEYS))}")
    _unknown(path, where, entry, EQUIVALENCE_KEYS, EQUIVALENCE_KEYS - {"columns"})
    named = [str(row) for row in entry["rows"]] + [str(entry["against"])]
    if not set(named) <= rows:
        raise ReportedError(f"{path}: {where}: rows {sorted(set(named) - rows)} are not rows of the table's cells")
    margin = entry["margin"]
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin:
        raise ReportedError(f"{path}: {where}.margin = {margin!r}: a positive number in the measure's units")
    if not str(entry["reason"]).strip() or not str(entry["claim"]).strip():
        raise ReportedError(f"{path}: {where}: say why this margin (`reason`) and quote the claim (`claim`)")
    return EquivalenceClaim(tuple(named[:-1]), named[-1], float(margin), str(entry["reason"]), str(entry["claim"]),
                            tuple(map(str, entry.get("columns") or ())))


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

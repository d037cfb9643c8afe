"""Reproduced vs reported: a table's scorecard against what its paper printed (``peftir.reports.reported``).

Per cell the paper prints and the pipeline rebuilt, of three kinds:

- a **metric** cell: both values, their absolute and relative difference and whether it is within the configured
  tolerance (a share of the printed value);
- an **improvement** cell ("Improvement (%)": the best method's gain over the baseline, in percent): its difference
  in percentage points, its tolerance carried through the two numbers it is computed from (``percentage_tolerance``),
  and the best row on each side — another best method is a difference; never in the metrics' median;
- a **copied** cell (a configuration's row copied from a paper, DPTDR Table 2's coCondenser): a reference, not a
  result: no difference, no tolerance, never "like for like", never an ER baseline (the row compared with it is "not
  computable: baseline copied").

Per method row, against its baseline row (the paper's own comparison, ``row_baselines``), Breuer et al.'s (SIGIR
2020) effect ratio ER (the reproduced mean improvement over the original's) and ΔRI (the original relative
improvement minus the reproduced one), computed with ``repro_eval``'s own functions, **per measure and collection**
— a column of the table — and for effectiveness measures only (a cost such as R-FLOPS and the geometries are listed
as left out); a paper's table gives only means, so each enters as one pseudo-topic. Each ER carries an interval:
the reproduced effect's 95 % interval, paired per query with seeds averaged, over the original effect. An original
effect within the printed precision or within the reproduction's noise (smaller than the standard error of the
paired difference, or a reproduced interval covering both zero and the effect) makes that measure's ER "unstable":
flagged, not printed, left out of the summary. A row is summarised **per collection**, its substituted columns apart from its
like-for-like ones (never pooled: unlike collections, and a stand-in with the real thing); each summary's verdict is
"reproduced" when the median of its ERs is in ``ER_RANGE`` and no measure's effect turned. Where the paper claims a
row *matches* another (``equivalence`` in the reported file, with a margin and its reason), each measure is tested
as an equivalence (TOST: the 90 % interval of the paired difference within the margin) and the row's verdict reads it.

A reported cell is matched to the built cell of the same id; failing that, to the cell of its stand-in dataset
(``reproduction.stand_ins``: the embedded default's vaswani stands in for a paper's Robust04). A retrieval table's
cells name the collection they score, and the reported file the paper's (``collection``): where they differ the
cell is labelled substituted. The embedded default's budgets are far from the papers': its scorecards measure that
distance, not the papers' claims, and say so.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import pandas as pd

from ..contract.cells import IMPROVEMENT, split_cell_id
from ..contract.measures import GEOMETRY_METRICS, R_FLOPS
from ..evaluation.significance import Paired as RunsPaired
from ..files import atomic_write, write_json
from ..provenance.records import read_workflow_file
from .cells import IMPROVEMENT_ROW, METHOD_ROW, REFERENCE_ROW
from .reported import ReportedCell, ReportedTable, load_reported
from .retrieval_tables import REPORTED_ROW
from .tables import latex_escape

ER_RANGE = (0.5, 1.5)        # the rows whose effect counts as reproduced in the summary
METRIC, PERCENTAGE, COPIED = "metric", "percentage", "copied"     # what a compared cell is
STABLE, UNSTABLE = "stable", "unstable"                           # an original effect, against the noise
EMBEDDED = ("Built on the embedded default (small collection, small backbone, 2-core budgets), not on the paper's "
            "configuration: the differences measure how far that budget is from the paper, not the paper's claims.")
CSV_COLUMNS = ["cell", "reported_cell", "row", "column", "kind", "metric", "better", "reported", "reported_printed",
               "reproduced", "reproduced_printed", "difference", "relative_difference", "tolerance", "within_tolerance",
               "paper_best", "reproduced_best", "ER", "ER_interval", "DRI", "effect", "substitutions"]
LOWER_IS_BETTER = frozenset({R_FLOPS, *GEOMETRY_METRICS})     # a cost, and representation geometries
REPRODUCED, NOT_REPRODUCED, UNDEFINED = "reproduced", "not reproduced", "undefined"
BASELINE_COPIED = "not computable: baseline copied"
EQUIVALENT, NOT_EQUIVALENT = "equivalent", "not shown equivalent"
UNRESOLVED, UNTESTED = "untestable at this margin", "untestable"      # too few queries for it; no per-query scores
EQUIVALENCE_VERDICTS = (EQUIVALENT, NOT_EQUIVALENT, UNRESOLVED, UNTESTED)
TOST = 0.90                  # two one-sided tests at 5 % each: the 90 % interval within the margin


def _substituted(cell: str, stand_ins: Mapping[str, str]) -> str:
    """A reported cell id with each dataset that has a stand-in replaced by it (a ranker table's ids name their
    dataset; a retrieval table's do not, and its cells say their collection instead: ``substitutions``)."""
    if " | " in cell:
        return cell
    return ":".join(stand_ins.get(part, part) for part in cell.split(":"))


def matched(reported: str, built: Mapping[str, dict], stand_ins: Mapping[str, str]) -> str | None:
    """The built cell a reported one is: the same id, else the id with its stand-in dataset, else None."""
    if reported in built:
        return reported
    substitute = _substituted(reported, stand_ins)
    return substitute if substitute in built else None


def baseline_row(row: str, baseline: str) -> str:
    """A row's baseline row: ``baseline`` itself, or in a table grouped by ranker (``twinbert:prefix``) the same
    group's row of the baseline's method (``twinbert:full`` for a baseline ``colbert:full``)."""
    if ":" in row and ":" in baseline:
        return f"{row.rsplit(':', 1)[0]}:{baseline.rsplit(':', 1)[1]}"
    return baseline


def _scores(values: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Values as repro_eval's score dicts: each column a pseudo-topic of one measure, ``value``."""
    return {column: {"value": value} for column, value in values.items()}


def effects(orig_a: Mapping[str, float], orig_b: Mapping[str, float], rep_a: Mapping[str, float],
            rep_b: Mapping[str, float]) -> tuple[float | None, float | None]:
    """ER and ΔRI (repro_eval's ``ER`` and ``DRI``) of an advanced system over a baseline, original vs reproduced,
    over the given columns; None where undefined (no original effect for ER, a zero baseline for ΔRI)."""
    from repro_eval.measure.overall_effects import DRI, ER

    columns = sorted(orig_a)
    if not columns:
        return None, None
    pick = [_scores({c: values[c] for c in columns}) for values in (orig_a, orig_b, rep_a, rep_b)]
    effect = statistics.fmean(orig_a[c] - orig_b[c] for c in columns)
    er = None if effect == 0 else ER(*pick)["value"]
    base = (statistics.fmean(orig_b[c] for c in columns), statistics.fmean(rep_b[c] for c in columns))
    dri = None if 0 in base else DRI(*pick)["value"]
    return er, dri


def better(metric: str | None) -> str | None:
    """Which direction of ``metric`` is better: "lower" for costs and geometries, "higher" for ir_measures'."""
    return None if metric is None else ("lower" if metric in LOWER_IS_BETTER else "higher")


def effectiveness(metric: str | None) -> bool:
    """Whether ER and ΔRI apply to ``metric``: an effectiveness measure (ir_measures'), not a cost or a geometry."""
    return better(metric) == "higher"


def printed_unit(printed: str, value: float | None) -> float | None:
    """One unit of the last printed digit, in ``value``'s scale (a percentage printed "59.1" for 0.591: 0.001);
    None where the printed text is not a plain number."""
    try:
        number = float(printed)
    except ValueError:
        return None
    if not number or value is None:
        return None                                 # a printed zero does not tell the scale (a percentage or not)
    return 10.0 ** -len(printed.partition(".")[2]) * abs(value / number)


def collection_of(cell: Mapping[str, Any]) -> str:
    """The collection a built cell scores: a retrieval table's cells name it (``collection``), a ranker table's
    cells in ``dataset``; "" where neither says (a mean over columns)."""
    return (cell.get("collection") if "collection" in cell else cell.get("dataset")) or ""


def substitutions(reported: ReportedTable, reported_cell: str, built_cell: str, stand_ins: Mapping[str, str],
                  built: Mapping[str, Any] | None = None) -> list[str]:
    """What a compared cell scores in place of the paper's, each as "kind: what": the stand-in dataset it was
    matched through, the collection a retrieval cell scores where the paper's scores another (the reported file's
    ``collection``), and what the reported file says of its row or column (a split, a model, a budget)."""
    found = [f"collection: {stand_ins[part]} for the paper's {part}" for part in reported_cell.split(":")
             if reported_cell != built_cell and part in stand_ins]
    if built is not None and " | " in reported_cell and built.get("collection"):
        paper = reported.collection_of(split_cell_id(reported_cell)[1])
        if paper and paper != built["collection"]:
            found.append(f"collection: {built['collection']} for the paper's {paper}")
    return found + [f"{s.kind}: {s.what}" for s in reported.substitutions if s.applies(reported_cell)]


def _shown(cell: Mapping[str, Any]) -> str:
    return f"{cell['printed']}{cell.get('stars') or ''}"


def _entry(entry: ReportedCell, cell: Mapping[str, Any], found: str, kind: str, subs: list[str]) -> dict:
    """A compared cell's common fields: both values, as printed, where they stand and what they substitute."""
    return {"cell": found, "reported_cell": entry.cell, "row": entry.row, "column": entry.column, "kind": kind,
            "metric": cell.get("metric"), "better": better(cell.get("metric")) if kind == METRIC else None,
            "reported": entry.value, "reported_printed": entry.printed + entry.marks, "reproduced": cell["value"],
            "reproduced_printed": _shown(cell), "difference": None, "relative_difference": None,
            "within_tolerance": None, "tolerance": None, "ER": None, "ER_interval": None, "DRI": None,
            "effect": None, "substitutions": subs, "printed_unit": printed_unit(entry.printed, entry.value)}


def _metric_entry(entry: ReportedCell, cell: Mapping[str, Any], found: str, subs: list[str], tolerance: float) -> dict:
    both = entry.value is not None and cell["value"] is not None
    made = _entry(entry, cell, found, METRIC, subs)
    if both:
        made["difference"] = cell["value"] - entry.value
        made["relative_difference"] = made["difference"] / abs(entry.value) if entry.value else None
    made["tolerance"] = tolerance * abs(entry.value) if entry.value is not None else None
    # a dash (no method beats the baseline) agrees only with a dash
    made["within_tolerance"] = abs(made["difference"]) <= made["tolerance"] if both else entry.value is cell["value"]
    return made


def percentage_tolerance(best: float, base: float, tolerance: float) -> float:
    """The tolerance of an improvement I = (best / base − 1) × 100, in percentage points, propagated to first order
    from a relative ``tolerance`` on each of its two terms, taken as independent: dI = 100 · best / base · √2 ·
    tolerance (5 % on each term is about 7 points on any small gain: a percentage is a fragile number to compare)."""
    return 100 * best / base * math.sqrt(2) * tolerance


def _best(values: Mapping[str, float | None], improvement: str, baseline: str | None) -> tuple[str | None,
                                                                                             float | None,
                                                                                             float | None]:
    """The best row of an improvement cell's column among its group's rows but the baseline (``values``: cell id →
    value), as its method's name, with its value and the baseline's: what the percentage is computed from."""
    group, _, column = improvement.partition(f":{IMPROVEMENT}:")
    base_row = baseline_row(f"{group}:x", baseline or "")
    rows = {split_cell_id(cell)[0]: value for cell, value in values.items()
            if cell.startswith(f"{group}:") and split_cell_id(cell)[1] == column and f":{IMPROVEMENT}:" not in cell
            and value is not None}
    base = rows.pop(base_row, None)
    if not rows:
        return None, None, base
    best = max(rows, key=lambda row: rows[row])                   # ties: the earlier row, as the table's own
    return best.rpartition(":")[2], rows[best], base


def _percentage_entry(entry: ReportedCell, cell: Mapping[str, Any], found: str, subs: list[str],
                      reported: ReportedTable, built: Mapping[str, dict], tolerance: float) -> dict:
    """An "Improvement (%)" cell compared in percentage points: its tolerance propagated from the metric tolerance
    of the two numbers it is computed from, and the best row on each side (a different best is a difference)."""
    made = _entry(entry, cell, found, PERCENTAGE, subs)
    best, best_value, base = _best({e.cell: e.value for e in reported.cells}, entry.cell, reported.baseline)
    made["paper_best"] = best
    made["reproduced_best"] = _best({c: b["value"] for c, b in built.items() if b.get("row_kind") == METHOD_ROW},
                                    found, reported.baseline)[0]
    if entry.value is None or cell["value"] is None:
        made["within_tolerance"] = entry.value is cell["value"]
        return made
    made["difference"] = cell["value"] - entry.value
    made["tolerance"] = (percentage_tolerance(best_value, base, tolerance) if best_value and base else None)
    made["within_tolerance"] = (made["tolerance"] is not None and abs(made["difference"]) <= made["tolerance"]
                                and best == made["reproduced_best"])
    return made


def _copied_entry(entry: ReportedCell, cell: Mapping[str, Any], found: str) -> dict:
    """A cell the build copies from the paper: a reference, never a result (no difference, no tolerance)."""
    made = _entry(entry, cell, found, COPIED, [])
    made["source"] = cell.get("source")
    return made


def build_scorecard(cells: list[dict], reported: ReportedTable, settings: Mapping[str, Any], report: str,
                    source: str) -> dict:
    """The scorecard of one table (its JSON twin's ``cells``) against the paper's ``reported`` numbers."""
    built = {cell["cell"]: cell for cell in cells}
    stand_ins, tolerance = settings["stand_ins"], settings["tolerance"]
    compared, reported_only = [], []
    for entry in reported.cells:
        found = matched(entry.cell, built, stand_ins)
        if found is None:
            reported_only.append({"cell": entry.cell, "row": entry.row, "column": entry.column,
                                  "printed": entry.printed + entry.marks, "why": "no such cell in this build"})
            continue
        cell = built[found]
        if cell.get("row_kind") == REPORTED_ROW:
            compared.append(_copied_entry(entry, cell, found))
            continue
        subs = substitutions(reported, entry.cell, found, stand_ins, cell)
        compared.append(_percentage_entry(entry, cell, found, subs, reported, built, tolerance)
                        if cell.get("row_kind") == IMPROVEMENT_ROW else _metric_entry(entry, cell, found, subs,
                                                                                      tolerance))
    rows = _row_effects(compared, built, reported)
    equivalence = _equivalence(reported, built, stand_ins)
    for row in rows:
        claims = [e for e in equivalence if e["row"] == row["row"] and e["collection"] == row["collection"]
                  and e["column"] in row["columns"]]
        if claims:
            verdicts = {e["verdict"] for e in claims}
            row["equivalence"] = claims
            row["equivalence_verdict"] = (EQUIVALENT if verdicts == {EQUIVALENT} else NOT_EQUIVALENT
                                          if NOT_EQUIVALENT in verdicts else UNRESOLVED if UNRESOLVED in verdicts
                                          else UNTESTED)
            if all(e["against"] == row["baseline"] for e in claims):      # the claim is about the row's comparison
                row["verdict"] = row["equivalence_verdict"]
    return {"report": report, "place": reported.place, "caption": reported.caption, "source": source,
            "baseline": reported.baseline, "budget": settings["budget"], "stand_ins": dict(stand_ins),
            "cells": compared, "rows": rows, "equivalence": equivalence, "parameters": _parameters(reported, cells),
            "reported_only": reported_only,
            "without_counterpart": [dict(entry) for entry in reported.without_counterpart],
            "summary": _summary(compared, rows, equivalence, reported, built, tolerance, reported_only),
            "original_runs": _original(cells, reported.baseline, settings)}


def _summary(compared: list[dict], rows: list[dict], equivalence: list[dict], reported: ReportedTable,
             built: Mapping[str, dict], tolerance: float, reported_only: list[dict]) -> dict:
    """What the caption counts: each kind of cell apart (metrics, percentages, copied), like for like apart from
    substituted, rows apart by collection and substitution, the equivalence tests."""
    metrics = [c for c in compared if c["kind"] == METRIC]
    percentages = [c for c in compared if c["kind"] == PERCENTAGE]
    differences = [abs(c["difference"]) for c in metrics if c["difference"] is not None]
    relative = [abs(c["relative_difference"]) for c in metrics if c["relative_difference"] is not None]
    points = [abs(c["difference"]) for c in percentages if c["difference"] is not None]
    judged = [r for r in rows if r["ER"] is not None]
    by_effect = [r for r in rows if r["verdict"] not in EQUIVALENCE_VERDICTS]      # judged by ER, not by TOST
    return {
        "compared": len(metrics) + len(percentages), "metric_cells": len(metrics), "percentage_cells": len(percentages),
        "copied": sum(c["kind"] == COPIED for c in compared),
        "within_tolerance": sum(bool(c["within_tolerance"]) for c in metrics + percentages), "tolerance": tolerance,
        "median_abs_difference": statistics.median(differences) if differences else None,
        "median_abs_relative_difference": statistics.median(relative) if relative else None,
        "median_abs_percentage_points": statistics.median(points) if points else None,
        "best_method_differs": sum(c["reported"] is not None and c["reproduced"] is not None
                                   and c.get("paper_best") is not None and c["paper_best"] != c["reproduced_best"]
                                   for c in percentages),
        "rows": len(rows), "rows_with_er": len(judged), "er_range": list(ER_RANGE),
        "rows_er_in_range": sum(r["verdict"] == REPRODUCED for r in rows),
        "rows_like_for_like": sum(not r["substituted"] for r in by_effect),
        "rows_like_for_like_reproduced": sum(not r["substituted"] and r["verdict"] == REPRODUCED for r in by_effect),
        "rows_substituted": sum(r["substituted"] for r in by_effect),
        "rows_substituted_reproduced": sum(r["substituted"] and r["verdict"] == REPRODUCED for r in by_effect),
        "rows_by_equivalence": len(rows) - len(by_effect),
        "rows_equivalent": sum(r["verdict"] == EQUIVALENT for r in rows),
        "rows_not_computable": sum(r["verdict"] == BASELINE_COPIED for r in rows),
        "like_for_like": sum(not c["substitutions"] for c in metrics + percentages),
        "substituted": sum(bool(c["substitutions"]) for c in metrics + percentages),
        "substitutions": sorted({what for c in metrics + percentages for what in c["substitutions"]}),
        "measures_with_er": sum(1 for r in rows for m in r["measures"] if m["ER"] is not None),
        "measures_unstable": sum(1 for r in rows for m in r["measures"] if m["effect"] == UNSTABLE),
        "equivalence_tests": len(equivalence), "equivalent": sum(e["verdict"] == EQUIVALENT for e in equivalence),
        "equivalence_unresolved": sum(e["verdict"] in (UNRESOLVED, UNTESTED) for e in equivalence),
        "reported_only": len(reported_only), "without_counterpart": len(reported.without_counterpart),
        "built_not_reported": len(set(built) - {c["cell"] for c in compared}),
        "parameters_equal": sum(p["equal"] for p in _parameters(reported, list(built.values()))),
        "parameters": len(reported.parameters)}


def _original(cells: list[dict], baseline: str | None, settings: Mapping[str, Any]) -> list[dict] | None:
    """KTU, RBO, nRMSE and p-values against the authors' runs, where the user gave them (``original_runs``)."""
    given = settings.get("original_runs")
    if not given or baseline is None:
        return None
    from .original_runs import against_original

    with tempfile.TemporaryDirectory(prefix="peftir-original-") as scratch:
        return against_original(cells, given, baseline, settings["budget"], Path(scratch))


class Paired(NamedTuple):
    """A compared cell's two numbers, its row's kind, its measure, the printed number's last unit, its collection,
    whether it substitutes something, and the built cell (its per-query runs)."""
    original: float
    reproduced: float
    kind: str | None
    metric: str | None
    unit: float | None
    collection: str
    substituted: bool
    built: Mapping[str, Any]


def _row_effects(compared: list[dict], built: Mapping[str, dict], reported: ReportedTable) -> list[dict]:
    """ER and ΔRI per method row against its baseline row (the paper's own comparison: ``row_baselines`` where the
    reported file names one, as SPLADE compares each backbone's adapters with that backbone's fine-tuning), per
    measure (column), never pooled: per row, one summary for each collection it scores, the substituted columns
    apart from the like-for-like ones; a row whose baseline is copied from the paper is not computable."""
    if reported.baseline is None:
        return []
    by_cell = {split_cell_id(c["cell"]): c for c in compared}
    pairs: dict[str, dict[str, Paired]] = {}
    copied: set[str] = set()
    for c in compared:
        row, column = split_cell_id(c["cell"])
        if c["kind"] == COPIED:
            copied.add(row)
        elif c["kind"] == METRIC and c["reported"] is not None and c["reproduced"] is not None:
            cell = built[c["cell"]]
            pairs.setdefault(row, {})[column] = Paired(
                c["reported"], c["reproduced"], cell.get("row_kind"), cell.get("metric"),
                c["printed_unit"], collection_of(cell), bool(c["substitutions"]), cell)
    found = []
    for row in sorted({split_cell_id(c["cell"])[0] for c in compared} - copied):
        against = reported.row_baselines.get(row) or baseline_row(row, reported.baseline)
        if against == row:
            continue
        if against in copied:
            found.append(_not_computable(row, against))
            continue
        columns, base = pairs.get(row, {}), pairs.get(against, {})
        # a column compares like with like: a method's cell with the baseline's method cell, a backbone as it comes
        # with the baseline's as it comes (DPTDR Table 8's zero-shot columns beside its full-shot ones)
        shared = [c for c in columns if c in base and columns[c].kind == base[c].kind
                  and columns[c].kind in (METHOD_ROW, REFERENCE_ROW)]
        groups: dict[tuple[str, bool], list[str]] = {}
        for column in shared:
            groups.setdefault((columns[column].collection, columns[column].substituted), []).append(column)
        for (collection, substituted), members in sorted(groups.items()):
            found.append(_row_group(row, against, collection, substituted, members, columns, base, by_cell))
    return found


def _not_computable(row: str, against: str) -> dict:
    return {"row": row, "baseline": against, "collection": "", "substituted": False, "columns": [], "measures": [],
            "left_out": [], "ER": None, "ER_range": None, "DRI": None, "DRI_range": None, "reversed": 0,
            "verdict": BASELINE_COPIED, "within_tolerance": 0}


def _row_group(row: str, against: str, collection: str, substituted: bool, members: list[str],
               columns: Mapping[str, Paired], base: Mapping[str, Paired], by_cell: Mapping) -> dict:
    """One row's measures on one collection (substituted or not) against its baseline, summarised."""
    measures = [_measure(columns[c], base[c], c, by_cell[(row, c)]) for c in members
                if effectiveness(columns[c].metric)]
    stable = [m for m in measures if m["effect"] == STABLE]
    ers = [m["ER"] for m in stable]
    dris = [m["DRI"] for m in stable if m["DRI"] is not None]
    median = statistics.median(ers) if ers else None
    return {"row": row, "baseline": against, "collection": collection, "substituted": substituted,
            "columns": [m["column"] for m in measures], "measures": measures,
            "left_out": [c for c in members if not effectiveness(columns[c].metric)],
            "ER": median, "ER_range": [min(ers), max(ers)] if ers else None,
            "DRI": statistics.median(dris) if dris else None, "DRI_range": [min(dris), max(dris)] if dris else None,
            "reversed": sum(er < 0 for er in ers),
            "verdict": UNDEFINED if median is None else
            (REPRODUCED if ER_RANGE[0] <= median <= ER_RANGE[1] and min(ers) > 0 else NOT_REPRODUCED),
            "within_tolerance": sum(bool(by_cell[(row, c)]["within_tolerance"]) for c in members)}


def _measure(method: Paired, base: Paired, column: str, cell: dict) -> dict:
    """One measure's ER and ΔRI of a method row over its baseline (and the compared cell's own), with ER's interval
    (the reproduced effect's 95 % interval, paired per query, over the original effect). The effect is "none" when
    the paper's is zero, "unstable" when it is within the printed precision, smaller than the reproduction's
    standard error of the paired difference, or when the reproduced interval covers both zero and the paper's effect
    (ER's interval covers 0 and 1); then ER is not printed and the row's summary leaves it out."""
    effect = method.original - base.original
    units = [unit for unit in (method.unit, base.unit) if unit is not None]
    er, dri = effects(*({column: value} for value in (method.original, base.original, method.reproduced,
                                                        base.reproduced)))
    paired = RunsPaired(method.built, base.built) if method.built.get("runs") and base.built.get("runs") else None
    low, high = paired.interval() if paired is not None and paired.reason is None else (None, None)
    error = paired.standard_error() if paired is not None and paired.reason is None else None
    # ER's interval covering both 0 and 1: the reproduction cannot tell the effect from none (a tight null
    # reproduction of a large effect excludes 1: its ER stands, and says "not reproduced")
    undecided = low is not None and low <= 0 <= high and low <= effect <= high
    if effect == 0:
        state = "none"
    elif (units and abs(effect) <= max(units) * (1 + 1e-9)) or (error is not None and abs(effect) < error) \
            or undecided:
        state = UNSTABLE
    else:
        state = STABLE
    interval = None if low is None or effect == 0 else sorted([low / effect, high / effect])
    if state != STABLE:
        er = None
    cell["ER"], cell["ER_interval"], cell["DRI"], cell["effect"] = er, interval, dri, state
    return {"column": column, "metric": method.metric, "original_effect": effect,
            "reproduced_effect": method.reproduced - base.reproduced, "standard_error": error,
            "reproduced_interval": None if low is None else [low, high], "effect": state, "ER": er,
            "ER_interval": interval, "DRI": dri}


def _equivalence(reported: ReportedTable, built: Mapping[str, dict], stand_ins: Mapping[str, str]) -> list[dict]:
    """The paper's claims that a row matches another (``equivalence``), each measure tested as an equivalence:
    two one-sided tests (TOST, Schuirmann) at 5 % each, i.e. the 90 % interval of the paired per-query difference
    within ± the claim's margin: "equivalent", else "not shown equivalent"; "untestable at this margin" where even
    a zero difference could not be shown equivalent (the interval's half width reaches the margin: too few
    queries), "untestable" without per-query scores; the paper's own difference beside it."""
    found = []
    printed = {entry.cell: entry for entry in reported.cells}
    for claim in reported.equivalence:
        for row in claim.rows:
            against = baseline_row(row, claim.against)            # in a table grouped by ranker, the row's group's
            for entry in reported.cells:
                cell_row, column = split_cell_id(entry.cell)
                other = entry.cell.replace(cell_row, against, 1) if cell_row == row else None
                if other is None or other not in printed or (claim.columns and column not in claim.columns):
                    continue
                mine, theirs = matched(entry.cell, built, stand_ins), matched(other, built, stand_ins)
                if mine is None or theirs is None or not effectiveness(built[mine].get("metric")):
                    continue
                paired = RunsPaired(built[mine], built[theirs]) if built[mine].get("runs") and \
                    built[theirs].get("runs") else None
                testable = paired is not None and paired.reason is None
                low, high = paired.interval(TOST) if testable else (None, None)
                half = paired.half_width(TOST) if testable else None
                paper = (None if entry.value is None or printed[other].value is None
                         else entry.value - printed[other].value)
                found.append({"row": row, "against": against, "column": column,
                              "collection": collection_of(built[mine]), "margin": claim.margin,
                              "paper_difference": paper, "interval_90": None if low is None else [low, high],
                              "half_width": half,
                              "verdict": (UNTESTED if low is None else UNRESOLVED if half >= claim.margin else
                                          EQUIVALENT if -claim.margin < low and high < claim.margin else
                                          NOT_EQUIVALENT),
                              "reason": claim.reason, "claim": claim.claim})
    return found


def _parameters(reported: ReportedTable, cells: list[dict]) -> list[dict]:
    """The printed trainable-parameter counts against the build's (counted from its modules), row by row, in the
    paper's unit: a share where the paper prints one ("2.23%", compared at its printed precision), else a count."""
    shown = {split_cell_id(cell["cell"])[0]: cell.get("printed_parameters") for cell in cells}
    return [{"row": row, "reported": printed, "reproduced": shown.get(row),
             "unit": "share" if printed.strip().endswith("%") else "count",
             "equal": parameters_equal(printed, shown.get(row))}
            for row, printed in reported.parameters.items()]


def parameters_equal(printed: str, shown: str | None) -> bool:
    """Whether the build's parameters column (``"1.5M (2.23%)"``) says what the paper printed: the same count, or,
    where the paper prints a share, the build's share rounded to the paper's digits."""
    if shown is None:
        return False
    count, _, share = shown.partition(";")[0].strip().partition(" (")      # "1.6M (0.4%); 26M trained": the kept
    text = printed.strip()
    if not text.endswith("%"):
        return count == text
    digits = text.rstrip("%").strip()
    share = share.rstrip(")").rstrip("%")
    try:
        return f"{float(share):.{len(digits.partition('.')[2])}f}" == digits
    except ValueError:
        return False


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def caption(scorecard: Mapping[str, Any]) -> str:
    """What the scorecard shows, its summary in words and, on the embedded default, what its numbers measure."""
    s = scorecard["summary"]
    text = (f"Reproduced vs reported: {scorecard['report']} against {scorecard['place']} of {scorecard['source']}. "
            f"{s['within_tolerance']} of {s['compared']} rebuilt cells within tolerance ({s['tolerance']:.0%} of a "
            f"printed metric; for an improvement in percent, that tolerance carried through its two terms, in "
            f"percentage points, and the same best method); median |difference| "
            f"{_number(s['median_abs_difference'])} over the {s['metric_cells']} metric cells")
    if s["percentage_cells"]:
        text += (f", {_number(s['median_abs_percentage_points'], 2)} percentage points over the "
                 f"{s['percentage_cells']} improvement cells ({s['best_method_differs']} with another best method)")
    text += ". "
    if s["copied"]:
        text += (f"{s['copied']} cell(s) copied from the paper by the configuration are references, not results: "
                 f"no difference, no tolerance, never an ER baseline ({s['rows_not_computable']} row(s) not "
                 f"computable). ")
    text += (f"Rows against {', '.join(sorted({r['baseline'] for r in scorecard['rows']})) or 'no baseline'}, one "
             f"summary per collection, substituted columns apart: {s['rows_like_for_like_reproduced']} of "
             f"{s['rows_like_for_like']} like-for-like and {s['rows_substituted_reproduced']} of "
             f"{s['rows_substituted']} substituted row summaries reproduced (the median of their per-measure ER in "
             f"[{s['er_range'][0]}, {s['er_range'][1]}], none reversed). ER and ΔRI per measure and collection, "
             f"effectiveness measures only, each ER with its interval (the reproduced effect's 95% interval over the "
             f"paper's effect); {s['measures_unstable']} original effect(s) within the printed precision or the "
             f"reproduction's noise (its standard error, or an interval covering both 0 and the effect) have no ER "
             f"(unst.).")
    if s["equivalence_tests"]:
        text += (f" The paper's equivalence claims, tested as equivalences (TOST, the 90% interval within the "
                 f"margin): {s['equivalent']} of {s['equivalence_tests']} measures equivalent, "
                 f"{s['equivalence_unresolved']} untestable (too few queries for the margin, or no per-query "
                 f"scores); {s['rows_equivalent']} of {s['rows_by_equivalence']} row summaries judged by their claim "
                 f"equivalent, apart from the rows judged by ER.")
    text += (f" {s['like_for_like']} cells compare like for like; {s['substituted']} (§) score something else in "
             f"place of the paper's: {'; '.join(s['substitutions'])}." if s["substituted"] else
             f" All {s['compared']} rebuilt cells compare like for like.")
    if s["reported_only"] or s["without_counterpart"]:
        text += (f" Printed but not compared: {s['reported_only']} (no cell in this build), "
                 f"{s['without_counterpart']} (no pipeline counterpart).")
    return text + (" " + EMBEDDED if scorecard["budget"] == "embedded" else "")


def shown_difference(cell: Mapping[str, Any]) -> tuple[str, str]:
    """A compared cell's difference as the LaTeX shows it: a metric's absolute and relative, an improvement's in
    percentage points, a copied cell's as none."""
    if cell["kind"] == COPIED:
        return "copied", "-"
    if cell["difference"] is None:
        return "-", "-"
    if cell["kind"] == PERCENTAGE:
        return f"{cell['difference']:+.2f} pp", "-"
    relative = "-" if cell["relative_difference"] is None else f"{100 * cell['relative_difference']:+.1f}"
    return f"{cell['difference']:+.4f}", relative


def render_scorecard_latex(scorecard: Mapping[str, Any]) -> str:
    """The scorecard as LaTeX: one line per compared cell, then one per method row (needs booktabs)."""
    lines = ["% Requires \\usepackage{booktabs}.", "\\begin{table*}", "\\centering",
             f"\\caption{{{latex_escape(caption(scorecard))}}}",
             f"\\label{{tab:{scorecard['report'].replace('/', '-')}-repro}}",
             "\\begin{tabular}{llrrrrrr}", "\\toprule",
             "Row & Column & Reported & Reproduced & $\\Delta$ & $\\Delta$ (\\%) & ER & $\\Delta$RI \\\\", "\\midrule"]
    for c in scorecard["cells"]:
        difference, relative = shown_difference(c)
        column = latex_escape(c["column"]) + ("$^\\S$" if c.get("substitutions") else "")
        lines.append(" & ".join([latex_escape(c["row"]), column, latex_escape(c["reported_printed"]),
                                 latex_escape(c["reproduced_printed"]), latex_escape(difference), relative,
                                 "unst." if c.get("effect") == UNSTABLE else _number(c["ER"], 2),
                                 _number(c["DRI"], 2)]) + " \\\\")
    if scorecard["rows"]:
        lines += ["\\midrule", "\\multicolumn{6}{l}{Per row and collection, against its baseline row: the median over "
                  "its measures (range)} & ER & $\\Delta$RI \\\\"]
        for r in scorecard["rows"]:
            lines.append(f"\\multicolumn{{6}}{{l}}{{{latex_escape(_row_words(r))}}} & "
                         f"{_number(r['ER'], 2)} & {_number(r['DRI'], 2)} \\\\")
    if scorecard.get("equivalence"):
        lines += ["\\midrule", "\\multicolumn{8}{l}{The paper's equivalence claims (TOST: the 90\\% interval of the "
                  "paired difference within $\\pm$ the margin)} \\\\"]
        for e in scorecard["equivalence"]:
            lines.append(f"\\multicolumn{{8}}{{l}}{{{latex_escape(_equivalence_words(e))}}} \\\\")
    if scorecard["parameters"]:
        lines += ["\\midrule", "\\multicolumn{8}{l}{Trainable parameters, in the paper's unit: printed vs built} "
                  "\\\\"]
        for entry in scorecard["parameters"]:
            built = entry["reproduced"] or "-"
            lines.append(f"\\multicolumn{{8}}{{l}}{{{latex_escape(entry['row'])}: {latex_escape(entry['reported'])} vs "
                         f"{latex_escape(built)} ({'equal' if entry['equal'] else 'differs'})}} \\\\")
    for entry in scorecard.get("original_runs") or []:
        lines.append(_original_line(entry))
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table*}"]
    return "\n".join(lines) + "\n"


def row_label(row: Mapping[str, Any]) -> str:
    """A row summary's name: the row, and the collection it is on (marked where its columns are substituted)."""
    where = row["collection"] + (", substituted" if row["substituted"] else "") if row["collection"] else \
        ("substituted" if row["substituted"] else "")
    return f"{row['row']}" + (f" ({where})" if where else "")


def _row_words(row: Mapping[str, Any]) -> str:
    """A row's effects in words: its verdict, over how many measures, the range of ER, what was left out."""
    defined = [m for m in row["measures"] if m["ER"] is not None]
    words = f"{row_label(row)} vs {row['baseline']}: {row['verdict']}"
    if row["reversed"]:
        words += f" ({row['reversed']} measure(s) reversed)"
    if row["ER_range"] is not None:
        words += f", ER over {len(defined)} measure(s) {row['ER_range'][0]:.2f} to {row['ER_range'][1]:.2f}"
    unstable = [m["column"] for m in row["measures"] if m["effect"] != STABLE]
    if unstable:
        words += f"; no ER where the paper's effect is within its precision or the reproduction's noise: " \
                 f"{', '.join(unstable)}"
    if row["left_out"]:
        words += f"; not effectiveness: {', '.join(row['left_out'])}"
    return words


def _equivalence_words(entry: Mapping[str, Any]) -> str:
    interval = "-" if entry["interval_90"] is None else \
        f"[{entry['interval_90'][0]:+.4f}, {entry['interval_90'][1]:+.4f}]"
    paper = "-" if entry["paper_difference"] is None else f"{entry['paper_difference']:+.4f}"
    return (f"{entry['row']} vs {entry['against']}, {entry['column']}: margin {entry['margin']:g}, reproduced 90% "
            f"interval {interval}: {entry['verdict']} (the paper's difference {paper})")


def _original_line(entry: Mapping[str, Any]) -> str:
    """One row and seed against the original runs: KTU and RBO of the advanced run, the largest nRMSE and the
    smallest p-value over the table's metrics (the JSON twin has each)."""
    nrmse = [v for v in (entry.get("nRMSE") or {}).get("advanced", {}).values() if v is not None]
    p = [v for v in entry["p"].get("advanced", {}).values() if v is not None]
    parts = [f"KTU {_number((entry.get('KTU') or {}).get('advanced'), 2)}",
             f"RBO {_number((entry.get('RBO') or {}).get('advanced'), 2)}",
             f"max nRMSE {_number(max(nrmse) if nrmse else None, 3)}", f"min p {_number(min(p) if p else None, 3)}"]
    return (f"\\multicolumn{{8}}{{l}}{{{latex_escape(entry['row'])}, seed {entry['seed']}, against the original run: "
            f"{'; '.join(parts)}}} \\\\")


def draw_effects(scorecard: Mapping[str, Any]):
    """Breuer et al.'s ER-vs-ΔRI plot: one point per method row at the median of its per-measure values, ER's range
    as a bar; (1, 0) is a perfect reproduction."""
    from .figures import plt

    fig, axis = plt.subplots(figsize=(5.2, 4.0))
    points = [r for r in scorecard["rows"] if r["ER"] is not None and r["DRI"] is not None]
    axis.axvline(1.0, color="grey", linewidth=0.8)
    axis.axhline(0.0, color="grey", linewidth=0.8)
    axis.axvspan(*ER_RANGE, color="green", alpha=0.08)
    for index, row in enumerate(points):
        low, high = row["ER_range"]
        axis.errorbar(row["ER"], row["DRI"], xerr=[[row["ER"] - low], [high - row["ER"]]], fmt="o", capsize=2,
                      color=plt.cm.tab10.colors[index % 10])
        axis.annotate(row_label(row), (row["ER"], row["DRI"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    if not points:
        axis.text(0.5, 0.5, "no row with both ER and ΔRI defined", ha="center", transform=axis.transAxes)
    axis.set_xlabel("Effect ratio (ER): median over the row's measures, bar: range")
    axis.set_ylabel("ΔRI (median over the row's measures)")
    axis.set_title(f"{scorecard['report']}: reproduced vs {scorecard['place']}", fontsize=9)
    fig.tight_layout()
    return fig


def write_scorecard(scorecard: dict, tex: str | os.PathLike, json_path: str | os.PathLike,
                    csv_path: str | os.PathLike, pdf: str | os.PathLike, png: str | os.PathLike) -> None:
    """The scorecard's LaTeX, JSON and CSV and its ER-vs-ΔRI figure (PDF, PNG; byte-stable), each atomically."""
    from .figures import rendered

    pdf_bytes, png_bytes = rendered(draw_effects(scorecard))
    for path, data in ((pdf, pdf_bytes), (png, png_bytes)):
        with atomic_write(path, "wb") as handle:
            handle.write(data)
    with atomic_write(tex) as handle:
        handle.write(render_scorecard_latex(scorecard))
    write_json(json_path, scorecard)
    with atomic_write(csv_path) as handle:
        frame = pd.DataFrame(scorecard["cells"], columns=CSV_COLUMNS)
        frame["substitutions"] = frame["substitutions"].map(lambda found: "; ".join(found or []))
        frame["ER_interval"] = frame["ER_interval"].map(lambda bounds: "" if bounds is None else
                                                        f"{bounds[0]:.4f} to {bounds[1]:.4f}")
        frame.to_csv(handle, index=False, lineterminator="\n")


def no_table(name: str, reported_path: str) -> ReportedTable:
    """What a reported file that lists no such table reports for it: nothing (its scorecard compares nothing)."""
    return ReportedTable(name=name, place=f"(no {name} in {reported_path})", caption="", baseline=None, cells=(),
                         parameters={}, without_counterpart=())


def reported_table(reported: Mapping[str, str], report: str, checkout: str | None = None) -> tuple[ReportedTable, str]:
    """The paper's numbers of ``report`` and the paper's name, from its reported file (``reported``: a
    ``records.workflow_file`` param, read from the ``checkout``, the job's by default)."""
    document = load_reported(read_workflow_file(reported, checkout))
    name = report.rpartition("/")[2]
    return document.tables.get(name) or no_table(name, reported["path"]), document.source


def scorecard_of(cells: list[dict], reported: Mapping[str, str], report: str, settings: Mapping[str, Any],
                 checkout: str | None = None) -> dict:
    """The scorecard of a table's ``cells`` against its paper's reported file."""
    table, source = reported_table(reported, report, checkout)
    return build_scorecard(cells, table, settings, report, source)


def make_scorecard(table_json: str, reported: Mapping[str, str], report: str, settings: Mapping[str, Any], tex: str,
                   json_path: str, csv_path: str, pdf: str, png: str) -> None:
    """The ``scorecard`` rule: a table (its JSON twin) against its paper's reported file."""
    with open(table_json) as handle:
        cells = json.load(handle)
    write_scorecard(scorecard_of(cells, reported, report, settings), tex, json_path, csv_path, pdf, png)

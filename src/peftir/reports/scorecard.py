"""Reproduced vs reported: a table's scorecard against what its paper printed (``peftir.reports.reported``).

Per cell the paper prints and the pipeline rebuilt: both values, their absolute and relative difference and whether
it is within the configured tolerance. Per method row, against the table's baseline row (full fine-tuning, or the
paper's own baseline): Breuer et al.'s effect ratio ER (the reproduced mean improvement over the original's, 1 when
the effect is reproduced, 0 when it vanishes, negative when it turns) and ΔRI (the original relative improvement
minus the reproduced one, 0 when reproduced), computed with ``repro_eval``'s own functions. A paper's table gives
only means, so each enters as one pseudo-topic (the way ``repro_eval``'s ``ER`` and ``DRI`` take score dicts): per
cell the column is the one topic; per row its columns are the topics of one measure. A summary counts the cells
within tolerance, the median |difference| and the rows whose ER is in [0.5, 1.5].

A reported cell is matched to the built cell of the same id; failing that, to the cell of its stand-in dataset
(``reproduction.stand_ins``: the embedded default's vaswani stands in for a paper's Robust04). The embedded default's
budgets are far from the papers': its scorecards measure that distance, not the papers' claims, and say so.
"""
from __future__ import annotations

import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..contract.cells import split_cell_id
from ..files import atomic_write, write_json
from ..provenance.records import read_workflow_file
from .reported import ReportedTable, load_reported
from .tables import latex_escape

ER_RANGE = (0.5, 1.5)        # the rows whose effect counts as reproduced in the summary
METHOD_ROW = "method"
EMBEDDED = ("Built on the embedded default (small collection, small backbone, 2-core budgets), not on the paper's "
            "configuration: the differences measure how far that budget is from the paper, not the paper's claims.")
CSV_COLUMNS = ["cell", "reported_cell", "row", "column", "reported", "reported_printed", "reproduced",
               "reproduced_printed", "difference", "relative_difference", "within_tolerance", "ER", "DRI"]


def _substituted(cell: str, stand_ins: Mapping[str, str]) -> str:
    """A reported cell id with each dataset that has a stand-in replaced by it."""
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


def _shown(cell: Mapping[str, Any]) -> str:
    return f"{cell['printed']}{cell.get('stars') or ''}"


def build_scorecard(cells: list[dict], reported: ReportedTable, settings: Mapping[str, Any], report: str,
                    source: str) -> dict:
    """The scorecard of one table (its JSON twin's ``cells``) against the paper's ``reported`` numbers."""
    built = {cell["cell"]: cell for cell in cells}
    stand_ins, tolerance = settings["stand_ins"], settings["tolerance"]
    compared, reported_only, pairs = [], [], {}
    for entry in reported.cells:
        found = matched(entry.cell, built, stand_ins)
        if found is None:
            reported_only.append({"cell": entry.cell, "row": entry.row, "column": entry.column,
                                  "printed": entry.printed + entry.marks, "why": "no such cell in this build"})
            continue
        cell = built[found]
        both = entry.value is not None and cell["value"] is not None
        difference = cell["value"] - entry.value if both else None
        compared.append({
            "cell": found, "reported_cell": entry.cell, "row": entry.row, "column": entry.column,
            "reported": entry.value, "reported_printed": entry.printed + entry.marks, "reproduced": cell["value"],
            "reproduced_printed": _shown(cell), "difference": difference,
            "relative_difference": difference / abs(entry.value) if both and entry.value else None,
            # a dash (no method beats the baseline) agrees only with a dash
            "within_tolerance": (abs(difference) <= tolerance * abs(entry.value) if both
                                 else entry.value is cell["value"]),
            "ER": None, "DRI": None})
        if both:
            pairs[split_cell_id(found)] = (entry.value, cell["value"], cell.get("row_kind"))
    rows = _row_effects(compared, pairs, reported.baseline)
    parameters = _parameters(reported, cells)
    within = [c["within_tolerance"] for c in compared]
    defined = [r for r in rows if r["ER"] is not None]
    summary = {
        "compared": len(compared), "within_tolerance": sum(within), "tolerance": tolerance,
        "median_abs_difference": statistics.median(abs(c["difference"]) for c in compared
                                                   if c["difference"] is not None)
        if any(c["difference"] is not None for c in compared) else None,
        "median_abs_relative_difference": statistics.median(
            abs(c["relative_difference"]) for c in compared if c["relative_difference"] is not None)
        if any(c["relative_difference"] is not None for c in compared) else None,
        "rows": len(rows), "rows_with_er": len(defined),
        "rows_er_in_range": sum(ER_RANGE[0] <= r["ER"] <= ER_RANGE[1] for r in defined), "er_range": list(ER_RANGE),
        "reported_only": len(reported_only), "without_counterpart": len(reported.without_counterpart),
        "built_not_reported": len(set(built) - {c["cell"] for c in compared}),
        "parameters_equal": sum(p["equal"] for p in parameters), "parameters": len(parameters)}
    return {"report": report, "place": reported.place, "caption": reported.caption, "source": source,
            "baseline": reported.baseline, "budget": settings["budget"], "stand_ins": dict(stand_ins),
            "cells": compared, "rows": rows, "parameters": parameters, "reported_only": reported_only,
            "without_counterpart": [dict(entry) for entry in reported.without_counterpart], "summary": summary,
            "original_runs": _original(cells, reported.baseline, settings)}


def _original(cells: list[dict], baseline: str | None, settings: Mapping[str, Any]) -> list[dict] | None:
    """KTU, RBO, nRMSE and p-values against the authors' runs, where the user gave them (``original_runs``)."""
    given = settings.get("original_runs")
    if not given or baseline is None:
        return None
    from .original_runs import against_original

    with tempfile.TemporaryDirectory(prefix="peftir-original-") as scratch:
        return against_original(cells, given, baseline, settings["budget"], Path(scratch))


def _row_effects(compared: list[dict], pairs: dict, baseline: str | None) -> list[dict]:
    """ER and ΔRI per method row against its baseline row (per cell, then per row over its columns); sets each
    compared cell's own ER and ΔRI."""
    if baseline is None:
        return []
    by_cell = {c["cell"]: c for c in compared}
    rows: dict[str, dict[str, tuple]] = {}
    for (row, column), values in pairs.items():
        rows.setdefault(row, {})[column] = values
    found = []
    for row, columns in rows.items():
        base = rows.get(baseline_row(row, baseline))
        if base is None or base is columns or any(kind != METHOD_ROW for *_, kind in columns.values()):
            continue
        shared = [c for c in columns if c in base]
        if not shared:
            continue
        orig_a, rep_a = ({c: columns[c][i] for c in shared} for i in (0, 1))
        orig_b, rep_b = ({c: base[c][i] for c in shared} for i in (0, 1))
        for column in shared:
            cell = next(c for c in compared if split_cell_id(c["cell"]) == (row, column))
            cell["ER"], cell["DRI"] = effects(*({column: v[column]} for v in (orig_a, orig_b, rep_a, rep_b)))
        er, dri = effects(orig_a, orig_b, rep_a, rep_b)
        found.append({"row": row, "baseline": baseline_row(row, baseline), "columns": shared, "ER": er, "DRI": dri,
                      "within_tolerance": sum(by_cell[c]["within_tolerance"] for c in by_cell
                                              if split_cell_id(c)[0] == row)})
    return found


def _parameters(reported: ReportedTable, cells: list[dict]) -> list[dict]:
    """The printed trainable-parameter counts against the build's (counted from its modules), row by row."""
    shown = {split_cell_id(cell["cell"])[0]: cell.get("printed_parameters") for cell in cells}
    return [{"row": row, "reported": printed, "reproduced": shown.get(row),
             "equal": shown.get(row) is not None and shown[row].split(" (")[0] == printed}
            for row, printed in reported.parameters.items()]


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def caption(scorecard: Mapping[str, Any]) -> str:
    """What the scorecard shows, its summary in words and, on the embedded default, what its numbers measure."""
    s = scorecard["summary"]
    text = (f"Reproduced vs reported: {scorecard['report']} against {scorecard['place']} of {scorecard['source']}. "
            f"{s['within_tolerance']} of {s['compared']} cells within {s['tolerance']:.0%} of the printed value; "
            f"median |difference| {_number(s['median_abs_difference'])}; {s['rows_er_in_range']} of "
            f"{s['rows_with_er']} rows with ER in [{s['er_range'][0]}, {s['er_range'][1]}] against "
            f"{', '.join(sorted({r['baseline'] for r in scorecard['rows']})) or 'no baseline'}.")
    if s["reported_only"] or s["without_counterpart"]:
        text += (f" Printed but not compared: {s['reported_only']} (no cell in this build), "
                 f"{s['without_counterpart']} (no pipeline counterpart).")
    return text + (" " + EMBEDDED if scorecard["budget"] == "embedded" else "")


def render_scorecard_latex(scorecard: Mapping[str, Any]) -> str:
    """The scorecard as LaTeX: one line per compared cell, then one per method row (needs booktabs)."""
    lines = ["% Requires \\usepackage{booktabs}.", "\\begin{table*}", "\\centering",
             f"\\caption{{{latex_escape(caption(scorecard))}}}",
             f"\\label{{tab:{scorecard['report'].replace('/', '-')}-repro}}",
             "\\begin{tabular}{llrrrrrr}", "\\toprule",
             "Row & Column & Reported & Reproduced & $\\Delta$ & $\\Delta$ (\\%) & ER & $\\Delta$RI \\\\", "\\midrule"]
    for c in scorecard["cells"]:
        relative = "-" if c["relative_difference"] is None else f"{100 * c['relative_difference']:+.1f}"
        difference = "-" if c["difference"] is None else f"{c['difference']:+.4f}"
        lines.append(" & ".join([latex_escape(c["row"]), latex_escape(c["column"]), latex_escape(c["reported_printed"]),
                                 latex_escape(c["reproduced_printed"]), difference, relative,
                                 _number(c["ER"], 2), _number(c["DRI"], 2)]) + " \\\\")
    if scorecard["rows"]:
        lines += ["\\midrule", "\\multicolumn{6}{l}{Per row, against its baseline row} & ER & $\\Delta$RI \\\\"]
        for r in scorecard["rows"]:
            lines.append(f"\\multicolumn{{6}}{{l}}{{{latex_escape(r['row'])} vs {latex_escape(r['baseline'])}}} & "
                         f"{_number(r['ER'], 2)} & {_number(r['DRI'], 2)} \\\\")
    for entry in scorecard.get("original_runs") or []:
        lines.append(_original_line(entry))
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table*}"]
    return "\n".join(lines) + "\n"


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
    """Breuer et al.'s ER-vs-ΔRI plot: one point per method row; (1, 0) is a perfect reproduction."""
    from .figures import plt

    fig, axis = plt.subplots(figsize=(5.2, 4.0))
    points = [r for r in scorecard["rows"] if r["ER"] is not None and r["DRI"] is not None]
    axis.axvline(1.0, color="grey", linewidth=0.8)
    axis.axhline(0.0, color="grey", linewidth=0.8)
    axis.axvspan(*ER_RANGE, color="green", alpha=0.08)
    for index, row in enumerate(points):
        axis.scatter(row["ER"], row["DRI"], color=plt.cm.tab10.colors[index % 10])
        axis.annotate(row["row"], (row["ER"], row["DRI"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    if not points:
        axis.text(0.5, 0.5, "no row with both ER and ΔRI defined", ha="center", transform=axis.transAxes)
    axis.set_xlabel("Effect ratio (ER)")
    axis.set_ylabel("ΔRI")
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
        pd.DataFrame(scorecard["cells"], columns=CSV_COLUMNS).to_csv(handle, index=False, lineterminator="\n")


def no_table(name: str, reported_path: str) -> ReportedTable:
    """What a reported file that lists no such table reports for it: nothing (its scorecard compares nothing)."""
    return ReportedTable(name=name, place=f"(no {name} in {reported_path})", caption="", baseline=None, cells=(),
                         parameters={}, without_counterpart=())


def scorecard_of(cells: list[dict], reported: Mapping[str, str], report: str, settings: Mapping[str, Any],
                 checkout: str | None = None) -> dict:
    """The scorecard of a table's ``cells`` against its paper's reported file (``reported``: a
    ``records.workflow_file`` param, read from the ``checkout``, the job's by default)."""
    document = load_reported(read_workflow_file(reported, checkout))
    name = report.rpartition("/")[2]
    table = document.tables.get(name) or no_table(name, reported["path"])
    return build_scorecard(cells, table, settings, report, document.source)


def make_scorecard(table_json: str, reported: Mapping[str, str], report: str, settings: Mapping[str, Any], tex: str,
                   json_path: str, csv_path: str, pdf: str, png: str) -> None:
    """The ``scorecard`` rule: a table (its JSON twin) against its paper's reported file."""
    with open(table_json) as handle:
        cells = json.load(handle)
    write_scorecard(scorecard_of(cells, reported, report, settings), tex, json_path, csv_path, pdf, png)

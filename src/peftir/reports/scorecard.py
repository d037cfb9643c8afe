"""Reproduced vs reported: a table's scorecard against what its paper printed (``peftir.reports.reported``).

Per cell the paper prints and the pipeline rebuilt: both values, their absolute and relative difference and whether
it is within the configured tolerance. Per method row, against the table's baseline row (full fine-tuning, or the
paper's own baseline): Breuer et al.'s (SIGIR 2020) effect ratio ER (the reproduced mean improvement over the
original's, 1 when the effect is reproduced, 0 when it vanishes, negative when it turns) and ΔRI (the original
relative improvement minus the reproduced one, 0 when reproduced), computed with ``repro_eval``'s own functions,
**per measure and collection** — a column of the table — as Breuer et al. define them: a paper's table gives only
means, so each enters as one pseudo-topic (the way ``repro_eval``'s ``ER`` and ``DRI`` take score dicts). Only
effectiveness measures (ir_measures', higher is better) get an ER: a cost such as R-FLOPS and the geometry measures
(lower is better, and not effectiveness) are listed as left out. Where the original effect is within the printed
precision (|Δ| at most one unit of the last printed digit: each number rounded by up to half a unit), ER is
undefined, flagged rather than printed, since any reproduced effect divided by it is noise. A row never adds unlike
columns: its per-measure values are kept side by side and summarised by their median and range; its verdict is
"reproduced" when that median is in ``ER_RANGE`` and no measure's effect turned (an even number of measures with
opposite effects would otherwise average back to 1). The summary counts the cells within tolerance, the median
|difference| and the rows reproduced.

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
from typing import Any, Mapping, NamedTuple

import pandas as pd

from ..contract.cells import split_cell_id
from ..contract.measures import GEOMETRY_METRICS, R_FLOPS
from ..files import atomic_write, write_json
from ..provenance.records import read_workflow_file
from .reported import ReportedTable, load_reported
from .tables import latex_escape

ER_RANGE = (0.5, 1.5)        # the rows whose effect counts as reproduced in the summary
METHOD_ROW = "method"
EMBEDDED = ("Built on the embedded default (small collection, small backbone, 2-core budgets), not on the paper's "
            "configuration: the differences measure how far that budget is from the paper, not the paper's claims.")
CSV_COLUMNS = ["cell", "reported_cell", "row", "column", "metric", "better", "reported", "reported_printed",
               "reproduced", "reproduced_printed", "difference", "relative_difference", "within_tolerance", "ER", "DRI",
               "effect", "substitutions"]
LOWER_IS_BETTER = frozenset({R_FLOPS, *GEOMETRY_METRICS})     # a cost, and representation geometries
REPRODUCED, NOT_REPRODUCED, UNDEFINED = "reproduced", "not reproduced", "undefined"


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


def substitutions(reported: ReportedTable, reported_cell: str, built_cell: str,
                  stand_ins: Mapping[str, str]) -> list[str]:
    """What a compared cell scores in place of the paper's, each as "kind: what": the stand-in dataset it was
    matched through, and what the reported file says of its row or column (a split, a model, a budget)."""
    found = [f"collection: {stand_ins[part]} for the paper's {part}" for part in reported_cell.split(":")
             if reported_cell != built_cell and part in stand_ins]
    return found + [f"{s.kind}: {s.what}" for s in reported.substitutions if s.applies(reported_cell)]


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
            "metric": cell.get("metric"), "better": better(cell.get("metric")),
            "reported": entry.value, "reported_printed": entry.printed + entry.marks, "reproduced": cell["value"],
            "reproduced_printed": _shown(cell), "difference": difference,
            "relative_difference": difference / abs(entry.value) if both and entry.value else None,
            # a dash (no method beats the baseline) agrees only with a dash
            "within_tolerance": (abs(difference) <= tolerance * abs(entry.value) if both
                                 else entry.value is cell["value"]),
            "ER": None, "DRI": None, "effect": None,
            "substitutions": substitutions(reported, entry.cell, found, stand_ins)})
        if both:
            pairs[split_cell_id(found)] = Paired(entry.value, cell["value"], cell.get("row_kind"), cell.get("metric"),
                                                 printed_unit(entry.printed, entry.value))
    rows = _row_effects(compared, pairs, reported.baseline, reported.row_baselines)
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
        "rows_er_in_range": sum(r["verdict"] == REPRODUCED for r in rows), "er_range": list(ER_RANGE),
        "like_for_like": sum(not c["substitutions"] for c in compared),
        "substituted": sum(bool(c["substitutions"]) for c in compared),
        "substitutions": sorted({what for c in compared for what in c["substitutions"]}),
        "measures_with_er": sum(1 for r in rows for m in r["measures"] if m["ER"] is not None),
        "measures_unstable": sum(1 for r in rows for m in r["measures"] if m["effect"] == "unstable"),
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


class Paired(NamedTuple):
    """A compared cell's two numbers, its row's kind, its measure and the printed number's last unit."""
    original: float
    reproduced: float
    kind: str | None
    metric: str | None
    unit: float | None


def _row_effects(compared: list[dict], pairs: dict[tuple[str, str], Paired], baseline: str | None,
                 row_baselines: Mapping[str, str]) -> list[dict]:
    """ER and ΔRI per method row against its baseline row (the paper's own comparison: ``row_baselines`` where the
    reported file names one, as SPLADE compares each backbone's adapters with that backbone's fine-tuning), per
    measure (column) and never pooled: each compared cell's own ER and ΔRI, and per row the measures side by side
    with their median and range and a verdict."""
    if baseline is None:
        return []
    by_cell = {split_cell_id(c["cell"]): c for c in compared}
    rows: dict[str, dict[str, Paired]] = {}
    for (row, column), values in pairs.items():
        rows.setdefault(row, {})[column] = values
    found = []
    for row, columns in rows.items():
        against = row_baselines.get(row) or baseline_row(row, baseline)
        base = rows.get(against)
        if base is None or base is columns or any(p.kind != METHOD_ROW for p in columns.values()):
            continue
        shared = [c for c in columns if c in base]
        if not shared:
            continue
        measures = [_measure(columns[c], base[c], c, by_cell[(row, c)]) for c in shared
                    if effectiveness(columns[c].metric)]
        ers = [m["ER"] for m in measures if m["ER"] is not None]
        dris = [m["DRI"] for m in measures if m["DRI"] is not None]
        median = statistics.median(ers) if ers else None
        found.append({"row": row, "baseline": against, "columns": [m["column"] for m in measures],
                      "measures": measures, "left_out": [c for c in shared if not effectiveness(columns[c].metric)],
                      "ER": median, "ER_range": [min(ers), max(ers)] if ers else None,
                      "DRI": statistics.median(dris) if dris else None,
                      "DRI_range": [min(dris), max(dris)] if dris else None,
                      "reversed": sum(er < 0 for er in ers),
                      "verdict": UNDEFINED if median is None else
                      (REPRODUCED if ER_RANGE[0] <= median <= ER_RANGE[1] and min(ers) > 0 else NOT_REPRODUCED),
                      "within_tolerance": sum(c["within_tolerance"] for key, c in by_cell.items() if key[0] == row)})
    return found


def _measure(method: Paired, base: Paired, column: str, cell: dict) -> dict:
    """One measure's ER and ΔRI of a method row over its baseline (and the compared cell's own): ER undefined
    where the original effect is within the printed precision ("unstable") or zero ("none")."""
    effect = method.original - base.original
    units = [unit for unit in (method.unit, base.unit) if unit is not None]
    er, dri = effects(*({column: value} for value in (method.original, base.original, method.reproduced,
                                                        base.reproduced)))
    state = "none" if effect == 0 else ("unstable" if units and abs(effect) <= max(units) * (1 + 1e-9) else "stable")
    if state != "stable":
        er = None
    cell["ER"], cell["DRI"], cell["effect"] = er, dri, state
    return {"column": column, "metric": method.metric, "original_effect": effect,
            "reproduced_effect": method.reproduced - base.reproduced, "effect": state, "ER": er, "DRI": dri}


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
            f"{s['within_tolerance']} of {s['compared']} cells within {s['tolerance']:.0%} of the printed value; "
            f"median |difference| {_number(s['median_abs_difference'])}; {s['rows_er_in_range']} of "
            f"{s['rows_with_er']} rows reproduced (the median of their per-measure ER in [{s['er_range'][0]}, "
            f"{s['er_range'][1]}]) against "
            f"{', '.join(sorted({r['baseline'] for r in scorecard['rows']})) or 'no baseline'}. ER and ΔRI per "
            f"measure and collection, effectiveness measures only; {s['measures_unstable']} original effect(s) "
            f"within the printed precision have no ER (unst.).")
    text += (f" {s['like_for_like']} cells compare like for like; {s['substituted']} (§) score something else in "
             f"place of the paper's: {'; '.join(s['substitutions'])}." if s["substituted"] else
             f" All {s['compared']} cells compare like for like.")
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
        column = latex_escape(c["column"]) + ("$^\\S$" if c.get("substitutions") else "")
        lines.append(" & ".join([latex_escape(c["row"]), column, latex_escape(c["reported_printed"]),
                                 latex_escape(c["reproduced_printed"]), difference, relative,
                                 "unst." if c.get("effect") == "unstable" else _number(c["ER"], 2),
                                 _number(c["DRI"], 2)]) + " \\\\")
    if scorecard["rows"]:
        lines += ["\\midrule", "\\multicolumn{6}{l}{Per row, against its baseline row: the median over its measures "
                  "(range)} & ER & $\\Delta$RI \\\\"]
        for r in scorecard["rows"]:
            lines.append(f"\\multicolumn{{6}}{{l}}{{{latex_escape(_row_words(r))}}} & "
                         f"{_number(r['ER'], 2)} & {_number(r['DRI'], 2)} \\\\")
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


def _row_words(row: Mapping[str, Any]) -> str:
    """A row's effects in words: its verdict, over how many measures, the range of ER, what was left out."""
    defined = [m for m in row["measures"] if m["ER"] is not None]
    words = f"{row['row']} vs {row['baseline']}: {row['verdict']}"
    if row["reversed"]:
        words += f" ({row['reversed']} measure(s) reversed)"
    if row["ER_range"] is not None:
        words += f", ER over {len(defined)} measure(s) {row['ER_range'][0]:.2f} to {row['ER_range'][1]:.2f}"
    unstable = [m["column"] for m in row["measures"] if m["effect"] != "stable"]
    if unstable:
        words += f"; no ER where the paper's effect is within its precision: {', '.join(unstable)}"
    if row["left_out"]:
        words += f"; not effectiveness: {', '.join(row['left_out'])}"
    return words


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
        axis.annotate(row["row"], (row["ER"], row["DRI"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
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

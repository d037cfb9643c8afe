"""A table's significance companion (``results/tables/<paper>/tableN.significance.{tex,csv,json}``): every
comparison the table's stars make, tested again on per-query scores and corrected over the table's family
(``peftir.evaluation.significance``), beside what the **paper** marked for it (its transcribed marks in
``config/reported``): per comparison the paper's verdict, the reproduction's uncorrected and corrected ones, and
whether the paper's significance was kept, lost or gained. Where the paper prints no test for a table, each
comparison says so. The rebuilt table's own stars (its own test, as the table prints them) stay beside them."""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

import pandas as pd

from ..contract.cells import split_cell_id
from ..evaluation.significance import significance_table
from ..files import atomic_write, write_json
from .reported import ReportedCell, ReportedTable
from .scorecard import matched, reported_table, substitutions
from .tables import latex_escape

CSV_COLUMNS = ["cell", "against", "paired", "unpaired_reason", "n", "n_baseline", "mean_difference", "ci_low",
               "ci_high", "effect_size", "effect_size_kind", "p_t", "p_permutation", "p_adjusted",
               "significant_uncorrected", "significant", "paper_marks", "paper_direction", "paper_significant",
               "against_paper", "substitutions", "table_stars", "table_p"]
TESTS = {"t": "Student's paired t-test (Welch's t-test unpaired)",
         "permutation": "a randomisation test (paired: sign flips; unpaired: label shuffles)"}
CORRECTIONS = {"holm": "Holm's step-down correction", "bonferroni": "Bonferroni's correction",
               "none": "no correction"}
STARS = frozenset("*†")          # the papers' marks that say "significant against the baseline" by themselves
NOT_TESTED, NOT_IN_PAPER, UNREAD = "no test printed", "not in the paper", "unread"


def _letter(entry: ReportedCell | None) -> str | None:
    """The row letter SPLADE's tables give a row ("a Finetuning", "CC + MLM FLOPS d finetuning"), or None."""
    letters = [word for word in (entry.row.split() if entry else []) if len(word) == 1 and word.isalpha()]
    return letters[-1] if letters else None


def paper_direction(cell: ReportedCell, baseline: ReportedCell | None, letters: bool) -> int | None:
    """What the paper's marks say of ``cell`` against ``baseline``: 1 significantly better, -1 significantly worse,
    0 not significant, None where they cannot be read. Stars ("*", "**": better than the baseline) by themselves;
    SPLADE's letters ("significantly better than the rows of these letters") on either side: the baseline's letter
    among the cell's marks, or the cell's among the baseline's."""
    if not letters:
        return 1 if cell.marks and set(cell.marks) <= STARS else (0 if not cell.marks else None)
    mine, theirs = _letter(cell), _letter(baseline)
    if mine is None or theirs is None:
        return None
    if theirs in cell.marks:
        return 1
    return -1 if mine in baseline.marks else 0


def against_paper(direction: int | None, significant: bool, difference: float) -> str:
    """A comparison's reproduced verdict relative to the paper's: kept (significant the same way), reversed
    (significant the other way), lost, gained or neither; ``direction`` as ``paper_direction`` gives it."""
    if direction is None:
        return UNREAD
    if direction == 0:
        return "gained" if significant else "neither"
    if not significant:
        return "lost"
    return "kept" if (difference > 0) == (direction > 0) else "reversed"


def _retargeted(cells: list[Mapping[str, Any]], row_baselines: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The cells with each comparison against the paper's own baseline for its row (``row_baselines``: SPLADE's
    coCondenser adapters against coCondenser's fine-tuning) where the table tested it against another."""
    ids = {cell["cell"] for cell in cells}
    made = []
    for cell in cells:
        row, column = split_cell_id(cell["cell"])
        own = row_baselines.get(row)
        target = f"{own} | {column}" if " | " in cell["cell"] else f"{own}:{column}"
        if cell.get("ttest") and own and target in ids and target != cell["ttest"]["against"]:
            cell = {**cell, "ttest": {**cell["ttest"], "against": target}}
        made.append(cell)
    return made


def companion(cells: list[Mapping[str, Any]], settings: Mapping[str, Any], report: str, paper: ReportedTable,
              stand_ins: Mapping[str, str]) -> dict:
    """The table's comparisons tested (``significance_table``, against the paper's own baseline of each row), each
    beside the paper's own mark for it and what the comparison scores in place of the paper's."""
    table = significance_table(_retargeted(cells, paper.row_baselines), settings, report)
    built = {cell["cell"]: cell for cell in cells}
    entries = {matched(entry.cell, built, stand_ins): entry for entry in paper.cells}
    marks = "".join(entry.marks for entry in paper.cells)
    tested, letters = bool(marks), any(mark.isalpha() for mark in marks)
    primary = table["primary"]
    for row in table["comparisons"]:
        entry, baseline = entries.get(row["cell"]), entries.get(row["against"])
        direction = paper_direction(entry, baseline, letters) if tested and entry else None
        row["significant_uncorrected"] = row[primary] is not None and row[primary] <= settings["alpha"]
        row["paper_marks"] = entry.marks if entry else None
        row["paper_direction"] = direction
        row["paper_significant"] = None if direction is None else direction != 0
        row["against_paper"] = (NOT_TESTED if not tested else NOT_IN_PAPER if entry is None else
                                against_paper(direction, row["significant"], row["mean_difference"]))
        row["substitutions"] = sorted({what for one, built_id in ((entry, row["cell"]), (baseline, row["against"]))
                                       if one is not None for what in substitutions(paper, one.cell, built_id,
                                                                                    stand_ins)})
    rows = table["comparisons"]
    table["summary"] |= {"paper_tests_table": tested, "paper_tested": sum(r["paper_significant"] is not None for r in rows),
                         "paper_significant": sum(r["paper_significant"] is True for r in rows),
                         "significant_uncorrected": sum(r["significant_uncorrected"] for r in rows),
                         "table_starred": sum(bool(r["table_stars"]) for r in rows),
                         "substituted": sum(bool(r["substitutions"]) for r in rows),
                         **{kind: sum(r["against_paper"] == kind for r in rows)
                            for kind in ("kept", "lost", "gained", "reversed")}}
    return table | {"paper": paper.place}


def caption(table: Mapping[str, Any]) -> str:
    """What the companion tests and how its verdicts compare with the paper's marks."""
    s, settings = table["summary"], table["settings"]
    text = (f"Significance of {table['report']} as the field asks for it: {s['family']} comparisons of the table's "
            f"stars ({s['paired']} paired on per-query scores, seeds averaged, {s['family'] - s['paired']} unpaired), "
            f"{TESTS[settings['test']]}, {CORRECTIONS[settings['correction']]} over the table's family, "
            f"alpha {settings['alpha']}; mean difference with its 95% confidence interval (unadjusted for the "
            f"family, where the p-values are adjusted) and effect size. Significant here: "
            f"{s['significant_uncorrected']} uncorrected, {s['significant_after_correction']} after correction. ")
    if not s["paper_tests_table"]:
        text += f"{table['paper']} of the paper prints no significance test: nothing to keep or lose."
    else:
        text += (f"Significant in {table['paper']} of the paper (its own tests, alpha and tails): "
                 f"{s['paper_significant']} of the {s['paper_tested']} comparisons its marks decide; against it, "
                 f"after correction: {s['kept']} kept, {s['reversed']} reversed, {s['lost']} lost, "
                 f"{s['gained']} gained.")
    if s["substituted"]:
        text += (f" {s['substituted']} comparisons score something else in place of the paper's (see each row's "
                 f"substitutions).")
    return text + _unpaired(table)


def _unpaired(table: Mapping[str, Any]) -> str:
    """The unpaired comparisons, each with why (a caption names them: none is unpaired silently)."""
    reasons: dict[str, list[str]] = {}
    for row in table["comparisons"]:
        if not row["paired"]:
            reasons.setdefault(row["unpaired_reason"], []).append(row["cell"])
    return "".join(f" Unpaired, {why}: {', '.join(cells)}." for why, cells in reasons.items())


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def paper_shown(row: Mapping[str, Any]) -> str:
    """The paper's verdict as the LaTeX and the page show it: its marks, and what they say."""
    if row["paper_direction"] is None:
        return {NOT_TESTED: "no test", NOT_IN_PAPER: "not printed"}.get(row["against_paper"],
                                                                       f"{row['paper_marks']} (unread)")
    said = {1: "sig. better", -1: "sig. worse", 0: "n.s."}[row["paper_direction"]]
    return f"{row['paper_marks'] or '-'} ({said})"


def render_significance_latex(table: Mapping[str, Any]) -> str:
    """One line per comparison (needs booktabs)."""
    lines = ["% Requires \\usepackage{booktabs}.", "\\begin{table*}", "\\centering",
             f"\\caption{{{latex_escape(caption(table))}}}",
             f"\\label{{tab:{table['report'].replace('/', '-')}-significance}}",
             "\\begin{tabular}{llrrrrrrccl}", "\\toprule",
             "Cell & Against & $n$ & $\\Delta$ & 95\\% CI (unadj.) & $d$ & $p_t$ & $p_\\mathrm{perm}$ & "
             "$p_\\mathrm{adj}$ & Paper & vs paper \\\\", "\\midrule"]
    for row in table["comparisons"]:
        interval = "-" if row["ci_low"] is None else f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"
        mark = "\\,$^\\dagger$" if row["significant"] else ""
        lines.append(" & ".join([
            latex_escape(row["cell"]), latex_escape(row["against"]),
            f"{row['n']}" + ("" if row["paired"] else f"/{row['n_baseline']}"), f"{row['mean_difference']:+.4f}",
            interval, _number(row["effect_size"], 2), _p(row["p_t"]), _p(row["p_permutation"]),
            _p(row["p_adjusted"]) + mark, latex_escape(paper_shown(row)), latex_escape(row["against_paper"])])
            + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table*}"]
    return "\n".join(lines) + "\n"


def write_significance(table: dict, tex: str | os.PathLike, json_path: str | os.PathLike,
                       csv_path: str | os.PathLike) -> None:
    """The companion's LaTeX, JSON and CSV, each atomically."""
    with atomic_write(tex) as handle:
        handle.write(render_significance_latex(table))
    write_json(json_path, table)
    with atomic_write(csv_path) as handle:
        frame = pd.DataFrame(table["comparisons"], columns=CSV_COLUMNS)
        frame["substitutions"] = frame["substitutions"].map(lambda found: "; ".join(found or []))
        frame.to_csv(handle, index=False, lineterminator="\n")


def companion_of(cells: list[Mapping[str, Any]], settings: Mapping[str, Any], report: str,
                 reported: Mapping[str, str], stand_ins: Mapping[str, str], checkout: str | None = None) -> dict:
    """The companion of a table's ``cells`` against its paper's reported file (a ``records.workflow_file`` param,
    read from the ``checkout``, the job's by default): what the rule writes and the audit remakes."""
    return companion(cells, settings, report, reported_table(reported, report, checkout)[0], stand_ins)


def make_significance(table_json: str, report: str, settings: Mapping[str, Any], reported: Mapping[str, str],
                      stand_ins: Mapping[str, str], tex: str, json_path: str, csv_path: str) -> None:
    """The ``significance`` rule: a table's companion from its JSON twin and its paper's reported file."""
    with open(table_json) as handle:
        cells = json.load(handle)
    write_significance(companion_of(cells, settings, report, reported, stand_ins), tex, json_path, csv_path)

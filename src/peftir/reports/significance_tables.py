"""A table's significance companion (``results/tables/<paper>/tableN.significance.{tex,csv,json}``): every
comparison the table's stars make, beside what the **paper** said of it, judged two ways.

- **The paper's way**: what the paper tested is data (its reported file's ``test`` block: the test, paired or not,
  per-seed means or per-query scores, tails, the alpha of each mark, the correction; or that it prints none, or that
  its marks are not transcribed), and the reproduction is tested exactly so (``paper_way``: Semi-Siamese's one-tailed
  Student t-test with equal variances of three per-seed means against three, uncorrected, at its weakest mark's
  alpha). Against the paper's marks that gives ``against_paper``: *kept* (or *kept at a weaker level*), *reversed*
  (significant the other way; for a one-tailed test, significantly worse than the baseline is reversed, never
  gained), *gained*, *neither*, and a lost significance split by the reproduction's interval of the paired
  difference at the paper's level into *lost: inconclusive* (it covers both 0 and the paper's effect), *lost:
  contradicted* (it excludes the paper's effect) and *lost: supported per query* (it covers the effect, not 0).
- **As the field asks** (``peftir.evaluation.significance``): paired per-query tests, corrected within each family of
  a ranker group on a collection, shown beside as ``corrected`` (better / worse / n.s.), labelled as such.

The rebuilt table's own stars (its own test, as the table prints them) stay beside them."""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ..contract.cells import split_cell_id
from ..evaluation.significance import Paired, query_scores, significance_table
from ..files import atomic_write, write_json
from .reported import LETTERS, NONE_PRINTED, NOT_TRANSCRIBED, PRINTED, PaperTest, ReportedCell, ReportedTable
from .scorecard import matched, reported_table, substitutions
from .tables import latex_escape

CSV_COLUMNS = ["cell", "against", "correction_family", "paired", "untested_reason", "n", "dropped", "mean_difference",
               "ci_low", "ci_high", "effect_size", "p_t", "p_permutation", "p_adjusted", "significant", "corrected",
               "paper_marks", "paper_direction", "paper_effect", "paper_way_p_better", "paper_way_p_worse",
               "paper_way_direction", "paper_way_interval", "against_paper", "substitutions", "table_stars",
               "table_p"]
TESTS = {"t": "Student's paired t-test", "permutation": "a paired randomisation test (sign flips)"}
CORRECTIONS = {"holm": "Holm's step-down correction", "bonferroni": "Bonferroni's correction",
               "none": "no correction"}
STARS = frozenset("*†")          # the papers' marks that say "significant against the baseline" by themselves
NOT_TESTED, NOT_IN_PAPER, UNREAD, UNTESTABLE = "no test printed", "not in the paper", "unread", "untestable"
NOT_TRANSCRIBED_VERDICT = "marks not transcribed"
INCONCLUSIVE, CONTRADICTED, SUPPORTED = "lost: inconclusive", "lost: contradicted", "lost: supported per query"
KEPT_WEAKER = "kept at a weaker level"
VERDICTS = ("kept", KEPT_WEAKER, "reversed", INCONCLUSIVE, CONTRADICTED, SUPPORTED, "lost", "gained", "neither",
            UNTESTABLE)


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


def paper_way(cell: Mapping[str, Any], baseline: Mapping[str, Any], test: PaperTest) -> dict:
    """The reproduction of a comparison tested as the paper tested it (``test``): the one-tailed p-values that the
    cell is better and that it is worse than its baseline (a two-tailed test's p-value in the direction of the
    difference, 1 in the other), and the direction that decides at the paper's weakest alpha (1 better, -1 worse, 0
    neither, None where the test cannot be run on what the table holds). A one-tailed paper asks "better?" only;
    "worse?" is asked alike (one-tailed, the same alpha) so that a reversal is named, and said so."""
    if test.samples == "seeds":
        x = np.array(list((cell.get("per_seed") or {}).values()))
        y = np.array(list((baseline.get("per_seed") or {}).values()))
        paired = test.paired and len(x) == len(y)
    else:
        if test.paired:
            matched_scores = Paired(cell, baseline)
            x, y, paired = matched_scores.x, matched_scores.y, True
        else:
            mine, theirs = query_scores(cell), query_scores(baseline)
            x = np.array(list((mine or {}).values()))
            y = np.array(list((theirs or {}).values()))
            paired = False
    constant = (np.all(x - y == (x - y)[0]) if paired and len(x) else
                np.all(x == x[0]) and np.all(y == y[0]) if len(x) and len(y) else True)
    if len(x) < 2 or len(y) < 2 or constant:          # undefined, as the tables' own test (evaluation.stats)
        return {"p_better": None, "p_worse": None, "direction": None}
    run = (lambda side: scipy_stats.ttest_rel(x, y, alternative=side)) if paired else \
        (lambda side: scipy_stats.ttest_ind(x, y, equal_var=True, alternative=side))
    if test.tails == 1:
        better, worse = float(run("greater").pvalue), float(run("less").pvalue)
    else:
        both = float(run("two-sided").pvalue)
        higher = float(np.mean(x)) > float(np.mean(y))
        better, worse = (both, 1.0) if higher else (1.0, both)
    if np.isnan(better) or np.isnan(worse):
        return {"p_better": None, "p_worse": None, "direction": None}
    direction = 1 if better <= test.alpha else (-1 if worse <= test.alpha else 0)
    return {"p_better": better, "p_worse": worse, "direction": direction}


def level_reached(p: float | None, test: PaperTest) -> float | None:
    """The strictest of the paper's alphas that ``p`` reaches (0.01 for "**"), None where it reaches none."""
    reached = [alpha for alpha in test.marks.values() if p is not None and p <= alpha]
    return min(reached) if reached else None


def mark_level(marks: str, test: PaperTest) -> float | None:
    """The alpha of a cell's printed mark ("**" → 0.01); the letters' alpha for SPLADE's; None where unmarked."""
    if not marks:
        return None
    return test.marks.get(LETTERS) if test.letters else test.marks.get(marks)


def against_paper(direction: int | None, reproduced: int | None, tails: int,
                  interval: tuple[float | None, float | None] = (None, None),
                  paper_effect: float | None = None, weaker: bool = False) -> str:
    """A comparison's verdict, tested the paper's way, relative to the paper's (``direction`` as ``paper_direction``
    gives it, ``reproduced`` as ``paper_way`` does):

    - kept (``weaker``: only at a weaker mark's level than the paper's: "kept at a weaker level");
    - reversed: significant the other way; under a one-tailed test (the paper asks "better?" only), an unmarked cell
      whose reproduction is significantly worse is reversed where the paper's own effect is not negative, and
      "neither" where it is (worse in the paper as in the reproduction);
    - gained: significant where the paper found nothing (either way under a two-tailed test); neither;
    - lost, by the reproduction's ``interval`` of the paired difference (at the level matching the paper's test):
      inconclusive where it covers both 0 and the ``paper_effect``, contradicted where it excludes the effect,
      "supported per query" where it covers the effect and excludes 0 (the per-query scores agree with the paper,
      its few-sample test did not); plain "lost" where either is unknown."""
    if direction is None:
        return UNREAD
    if reproduced is None:
        return UNTESTABLE
    if direction == 0:
        if reproduced == 0:
            return "neither"
        if tails == 1 and reproduced < 0:
            return "neither" if paper_effect is not None and paper_effect < 0 else "reversed"
        return "gained"
    if reproduced == direction:
        return KEPT_WEAKER if weaker else "kept"
    if reproduced == -direction:
        return "reversed"
    low, high = interval
    if low is None or paper_effect is None:
        return "lost"
    if not low <= paper_effect <= high:
        return CONTRADICTED
    return INCONCLUSIVE if low <= 0 <= high else SUPPORTED


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


def _corrected(row: Mapping[str, Any]) -> str:
    """The verdict as the field asks for it: the family-corrected paired test, with the difference's sign."""
    if not row["paired"]:
        return UNTESTABLE
    if not row["significant"]:
        return "n.s."
    return "better" if row["mean_difference"] > 0 else "worse"


def companion(cells: list[Mapping[str, Any]], settings: Mapping[str, Any], report: str, paper: ReportedTable,
              stand_ins: Mapping[str, str]) -> dict:
    """The table's comparisons tested (``significance_table``, against the paper's own baseline of each row), each
    beside the paper's own mark for it, the paper's test rerun on the reproduction, and what the comparison scores
    in place of the paper's."""
    cells = _retargeted(cells, paper.row_baselines)
    table = significance_table(cells, settings, report)
    built = {cell["cell"]: cell for cell in cells}
    entries = {matched(entry.cell, built, stand_ins): entry for entry in paper.cells}
    test = paper.test
    for row in table["comparisons"]:
        entry, baseline = entries.get(row["cell"]), entries.get(row["against"])
        row["corrected"] = _corrected(row)
        row["paper_marks"] = entry.marks if entry else None
        row["paper_effect"] = (entry.value - baseline.value if entry and baseline and entry.value is not None
                               and baseline.value is not None else None)
        row["substitutions"] = sorted({what for one, built_id in ((entry, row["cell"]), (baseline, row["against"]))
                                       if one is not None for what in substitutions(paper, one.cell, built_id,
                                                                                    stand_ins, built[built_id])})
        row["paper_direction"] = row["paper_way_p_better"] = row["paper_way_p_worse"] = None
        row["paper_way_direction"] = row["paper_way_interval"] = None
        if test.status == NONE_PRINTED:
            row["against_paper"] = NOT_TESTED
        elif test.status == NOT_TRANSCRIBED:
            row["against_paper"] = NOT_TRANSCRIBED_VERDICT
        elif entry is None:
            row["against_paper"] = NOT_IN_PAPER
        else:
            direction = paper_direction(entry, baseline, test.letters)
            way = paper_way(built[row["cell"]], built[row["against"]], test)
            row["paper_direction"] = direction
            row["paper_way_p_better"], row["paper_way_p_worse"] = way["p_better"], way["p_worse"]
            row["paper_way_direction"] = way["direction"]
            # the interval that matches the paper's test: 90 % for a one-tailed test at 0.05, 95 % for a two-tailed
            confidence = 1 - (2 if test.tails == 1 else 1) * test.alpha
            interval = Paired(built[row["cell"]], built[row["against"]]).interval(confidence) if row["paired"] \
                else (None, None)
            row["paper_way_interval"] = None if interval[0] is None else [*interval, confidence]
            printed_level = mark_level(entry.marks, test) if direction == 1 else None
            reached = level_reached(way["p_better"], test)
            row["against_paper"] = against_paper(direction, way["direction"], test.tails, interval,
                                                 row["paper_effect"], weaker=printed_level is not None and
                                                 reached is not None and reached > printed_level)
    rows = table["comparisons"]
    table["summary"] |= {"paper_test": test.status,
                         "paper_tested": sum(r["paper_direction"] is not None for r in rows),
                         "paper_significant": sum(r["paper_direction"] not in (None, 0) for r in rows),
                         "table_starred": sum(bool(r["table_stars"]) for r in rows),
                         "substituted": sum(bool(r["substitutions"]) for r in rows),
                         **{kind: sum(r["against_paper"] == kind for r in rows) for kind in VERDICTS},
                         **{f"corrected_{kind}": sum(r["corrected"] == kind for r in rows)
                            for kind in ("better", "worse", "n.s.")}}
    return table | {"paper": paper.place, "paper_test": {"status": test.status, "words": test.words(),
                                                         "source": test.source}}


def caption(table: Mapping[str, Any]) -> str:
    """What the companion tests, the paper's test rerun its way, and how its verdicts compare with the paper's."""
    s, settings, test = table["summary"], table["settings"], table["paper_test"]
    text = (f"Significance of {table['report']}: {s['family']} comparisons of the table's stars against the paper's "
            f"baseline of each row (costs such as R-FLOPS and geometries left out). ")
    if test["status"] == NONE_PRINTED:
        text += f"{table['paper']} of the paper prints no significance test ({test['source']}): nothing to keep or lose. "
    elif test["status"] == NOT_TRANSCRIBED:
        text += (f"The paper tests {table['paper']} ({test['words']}), but its marks are not transcribed here "
                 f"({test['source']}): nothing to keep or lose. ")
    else:
        text += (f"The paper's way ({test['words']}), rerun on the reproduction ('worse?' asked alike, so that a "
                 f"reversal is named): {s['paper_significant']} of the {s['paper_tested']} comparisons its marks "
                 f"decide are significant in the paper; against them {s['kept']} kept, {s[KEPT_WEAKER]} kept at a "
                 f"weaker level, {s['reversed']} reversed, {s[INCONCLUSIVE]} lost but inconclusive (the "
                 f"reproduction's interval at the paper's level covers 0 and the paper's effect), {s[SUPPORTED]} lost "
                 f"but supported per query (it excludes 0 and covers the effect), {s[CONTRADICTED]} lost and "
                 f"contradicted (it excludes the effect), {s['lost']} lost (no interval), {s['gained']} gained, "
                 f"{s['neither']} neither, {s[UNTESTABLE]} untestable. ")
    text += (f"As the field asks: {TESTS[settings['test']]} on per-query scores (seeds averaged; {s['paired']} "
             f"paired, {s['untested']} untestable), {CORRECTIONS[settings['correction']]} within each of "
             f"{s['families']} families (a ranker group on a collection), alpha {settings['alpha']}: "
             f"{s['corrected_better']} better, {s['corrected_worse']} worse, {s['corrected_n.s.']} n.s.; mean "
             f"difference with its 95% confidence interval (unadjusted for the family, where the p-values are "
             f"adjusted) and Cohen's d_z.")
    if s["substituted"]:
        text += (f" {s['substituted']} comparisons score something else in place of the paper's (see each row's "
                 f"substitutions).")
    return text + _untested(table)


def _untested(table: Mapping[str, Any]) -> str:
    """The comparisons that could not be paired, each with why, and the queries dropped from pairings."""
    reasons: dict[str, list[str]] = {}
    dropped = []
    for row in table["comparisons"]:
        if not row["paired"]:
            reasons.setdefault(row["untested_reason"], []).append(row["cell"])
        elif any(row["dropped"]):
            dropped.append(f"{row['cell']} ({row['dropped'][0]} queries only in it, {row['dropped'][1]} only in "
                           f"its baseline)")
    text = "".join(f" Untested, {why}: {', '.join(cells)}." for why, cells in reasons.items())
    return text + (f" Paired on the queries both score: {'; '.join(dropped)}." if dropped else "")


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def paper_shown(row: Mapping[str, Any]) -> str:
    """The paper's verdict as the LaTeX and the page show it: its marks, and what they say."""
    if row["paper_direction"] is None:
        return {NOT_TESTED: "no test", NOT_IN_PAPER: "not printed",
                NOT_TRANSCRIBED_VERDICT: "not transcribed"}.get(row["against_paper"],
                                                                f"{row['paper_marks']} (unread)")
    said = {1: "sig. better", -1: "sig. worse", 0: "n.s."}[row["paper_direction"]]
    return f"{row['paper_marks'] or '-'} ({said})"


def render_significance_latex(table: Mapping[str, Any]) -> str:
    """One line per comparison (needs booktabs)."""
    lines = ["% Requires \\usepackage{booktabs}.", "\\begin{table*}", "\\centering",
             f"\\caption{{{latex_escape(caption(table))}}}",
             f"\\label{{tab:{table['report'].replace('/', '-')}-significance}}",
             "\\begin{tabular}{llrrrrrrcll}", "\\toprule",
             "Cell & Against & $n$ & $\\Delta$ & 95\\% CI (unadj.) & $d_z$ & $p_t$ & $p_\\mathrm{adj}$ & "
             "Corrected & Paper & Paper's way \\\\", "\\midrule"]
    for row in table["comparisons"]:
        interval = "-" if row["ci_low"] is None else f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"
        lines.append(" & ".join([
            latex_escape(row["cell"]), latex_escape(row["against"]), f"{row['n']}",
            "-" if row["mean_difference"] is None else f"{row['mean_difference']:+.4f}", interval,
            _number(row["effect_size"], 2), _p(row["p_t"]), _p(row["p_adjusted"]), latex_escape(row["corrected"]),
            latex_escape(paper_shown(row)), latex_escape(row["against_paper"])]) + " \\\\")
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
        frame["dropped"] = frame["dropped"].map(lambda pair: "/".join(map(str, pair or [])))
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

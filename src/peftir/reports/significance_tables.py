"""A table's significance companion (``results/tables/<paper>/tableN.significance.{tex,csv,json}``): every
comparison the table's stars make, tested again on per-query scores and corrected over the table's family
(``peftir.evaluation.significance``), beside the stars as published."""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

import pandas as pd

from ..evaluation.significance import significance_table
from ..files import atomic_write, write_json
from .tables import latex_escape

CSV_COLUMNS = ["cell", "against", "paired", "n", "n_baseline", "mean_difference", "ci_low", "ci_high", "effect_size",
               "effect_size_kind", "p_t", "p_permutation", "p_adjusted", "significant", "published_stars",
               "published_p"]
TESTS = {"t": "Student's paired t-test (Welch's t-test unpaired)",
         "permutation": "a randomisation test (paired: sign flips; unpaired: label shuffles)"}
CORRECTIONS = {"holm": "Holm's step-down correction", "bonferroni": "Bonferroni's correction",
               "none": "no correction"}


def caption(table: Mapping[str, Any]) -> str:
    """What the companion tests and how its verdicts differ from the stars as published."""
    s, settings = table["summary"], table["settings"]
    return (f"Significance of {table['report']} as the field asks for it: {s['family']} comparisons of the table's "
            f"stars ({s['paired']} paired on per-query scores, {s['family'] - s['paired']} unpaired), "
            f"{TESTS[settings['test']]}, {CORRECTIONS[settings['correction']]} over the table's family, "
            f"alpha {settings['alpha']}; mean difference with its 95% confidence interval and effect size. Stars as "
            f"published: {s['published_significant']}; significant after correction: "
            f"{s['significant_after_correction']} ({s['kept']} kept, {s['lost']} lost, {s['gained']} gained).")


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def render_significance_latex(table: Mapping[str, Any]) -> str:
    """One line per comparison (needs booktabs)."""
    lines = ["% Requires \\usepackage{booktabs}.", "\\begin{table*}", "\\centering",
             f"\\caption{{{latex_escape(caption(table))}}}",
             f"\\label{{tab:{table['report'].replace('/', '-')}-significance}}",
             "\\begin{tabular}{llrrrrrrcc}", "\\toprule",
             "Cell & Against & $n$ & $\\Delta$ & 95\\% CI & $d$ & $p_t$ & $p_\\mathrm{perm}$ & $p_\\mathrm{adj}$ & "
             "Published \\\\", "\\midrule"]
    for row in table["comparisons"]:
        interval = "-" if row["ci_low"] is None else f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"
        mark = "\\,$^\\dagger$" if row["significant"] else ""
        lines.append(" & ".join([
            latex_escape(row["cell"]), latex_escape(row["against"]),
            f"{row['n']}" + ("" if row["paired"] else f"/{row['n_baseline']}"), f"{row['mean_difference']:+.4f}",
            interval, _number(row["effect_size"], 2), _p(row["p_t"]), _p(row["p_permutation"]),
            _p(row["p_adjusted"]) + mark, latex_escape(row["published_stars"] or "-")]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table*}"]
    return "\n".join(lines) + "\n"


def write_significance(table: dict, tex: str | os.PathLike, json_path: str | os.PathLike,
                       csv_path: str | os.PathLike) -> None:
    """The companion's LaTeX, JSON and CSV, each atomically."""
    with atomic_write(tex) as handle:
        handle.write(render_significance_latex(table))
    write_json(json_path, table)
    with atomic_write(csv_path) as handle:
        pd.DataFrame(table["comparisons"], columns=CSV_COLUMNS).to_csv(handle, index=False, lineterminator="\n")


def make_significance(table_json: str, report: str, settings: Mapping[str, Any], tex: str, json_path: str,
                      csv_path: str) -> None:
    """The ``significance`` rule: a table's companion from its JSON twin."""
    with open(table_json) as handle:
        cells = json.load(handle)
    write_significance(significance_table(cells, settings, report), tex, json_path, csv_path)

"""The paper's result tables (Tables 3-7): a pandas DataFrame of cells, written as LaTeX, JSON and CSV.

``peftir.reports.cells`` computes every printed number; here they become one DataFrame with a row
per cell (its place in the table, its value, stars, p-value, the runs and per-query values behind
it). pandas writes the CSV (flat columns) and lays the LaTeX out (``Styler.to_latex``: booktabs
rules, multirow model names, multicolumn dataset headers) in the paper's layout: model × method
rows with the number of trainable parameters, dataset × metric columns, reference rows (BM25, the
untrained backbone) and an "Improvement (%)" row per model. The JSON twin holds the same DataFrame's records with their
values exact (pandas' own ``to_json`` rounds floats to 15 digits, too coarse for the audit).
"""
from __future__ import annotations

import json
import os
import re

import pandas as pd

from ..files import atomic_write
from .cells import RunRecord, table_cells

P_NOTE = r"$^{*}p \le 0.05$, $^{**}p \le 0.01$ (1-tailed)"
PARAMETERS = "# of trainable parameters"
ROW_TITLE = "Fine-tuning method"   # shown above the row labels
# trainable_parameters: what the deployed model keeps of its training (the papers' count); where training updated
# more (DPTDR's reparameterisation MLP, dropped after training) the JSON's trained_parameters holds that count
CSV_COLUMNS = ["cell", "row_kind", "group", "label", "row", "trainable_parameters", "dataset", "metric", "method",
               "value", "printed", "stars", "p_value", "n_runs"]

_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}", "→": r"$\rightarrow$", "≤": r"$\le$"}
_LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    """Labels are plain text; make LaTeX print them verbatim (and the paper's arrows, which pandas'
    own escaping leaves as Unicode)."""
    return _LATEX_PATTERN.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)


def run_records(metrics_files: list[str], summaries: list[str]) -> list[RunRecord]:
    """The table's runs: each metrics file with its training summary (which holds the parameter count)."""
    records = []
    for metrics_file, summary_file in zip(metrics_files, summaries, strict=True):
        with open(summary_file) as handle:
            summary = json.load(handle)
        records.append(RunRecord(dataset=summary["dataset"], ranker=summary["ranker"], method=summary["method"],
                                 fold=summary["fold"], seed=summary["seed"], metrics_file=metrics_file,
                                 trainable_parameters=summary["trainable_parameters"]))
    return records


def table_frame(layout: dict, records: list[RunRecord], references: dict[str, dict[str, list[str]]]) -> pd.DataFrame:
    """One row per printed number, in print order (columns: see ``peftir.reports.cells``); object columns,
    so a missing value stays None (no NaN) and a count an int."""
    return pd.DataFrame(table_cells(layout, records, references), dtype=object)


def _shown(cell: pd.Series) -> str:
    text = latex_escape(cell["printed"])
    return text + (f"$^{{{cell['stars']}}}$" if cell["stars"] else "")


def render_latex(frame: pd.DataFrame, name: str, caption: str, note: str = P_NOTE, row_title: str = ROW_TITLE) -> str:
    """A complete ``table*`` float in the layout of the paper's Tables 3-7 (needs booktabs and multirow);
    another paper's tables (``peftir.clir.reports``) name their own test in ``note`` and rows in ``row_title``."""
    rows = list(dict.fromkeys(zip(frame["group"], frame["label"])))
    columns = list(dict.fromkeys(zip(frame["dataset_label"], frame["metric"])))
    values = frame.assign(shown=frame.apply(_shown, axis=1))
    wide = values.pivot(index=["group", "label"], columns=["dataset_label", "metric"], values="shown")
    wide = wide.loc[rows, columns]
    counts = values.drop_duplicates(["group", "label"]).set_index(["group", "label"])["printed_parameters"]
    wide.insert(0, ("", PARAMETERS), counts.loc[rows].map(latex_escape))
    wide.index = pd.MultiIndex.from_tuples([tuple(map(latex_escape, row)) for row in rows])
    wide.columns = pd.MultiIndex.from_tuples([tuple(map(latex_escape, column)) for column in wide.columns],
                                             names=[None, row_title])
    latex = wide.style.to_latex(
        environment="table*", position_float="centering", hrules=True, clines="skip-last;data",
        multirow_align="c", multicol_align="c", column_format="llr" + "c" * len(columns),
        caption=f"{latex_escape(caption)} Note: {note}.", label=f"tab:{name}")
    return "% Requires \\usepackage{booktabs} and \\usepackage{multirow}.\n" + latex


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The flat columns of the cells (no nested runs), one line per printed number."""
    return frame.assign(n_runs=frame["runs"].map(lambda runs: len(runs) if runs else 0))[CSV_COLUMNS]


def write_table(frame: pd.DataFrame, name: str, caption: str, tex_path: str | os.PathLike,
                json_path: str | os.PathLike, csv_path: str | os.PathLike, note: str = P_NOTE,
                row_title: str = ROW_TITLE) -> None:
    """Write the LaTeX table, its JSON twin (the cells' records) and a flat CSV, each atomically."""
    with atomic_write(tex_path) as handle:
        handle.write(render_latex(frame, name, caption, note, row_title))
    with atomic_write(json_path) as handle:
        json.dump(frame.to_dict(orient="records"), handle, indent=1, allow_nan=False)
        handle.write("\n")
    with atomic_write(csv_path) as handle:
        csv_frame(frame).to_csv(handle, index=False, lineterminator="\n")


def read_table(json_path: str | os.PathLike) -> pd.DataFrame:
    """A table's cells back from its JSON twin."""
    with open(json_path) as handle:
        return pd.DataFrame(json.load(handle), dtype=object)

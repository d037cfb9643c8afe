"""The modular cross-lingual rerankers' tables (paper Tables 1-3) and figure (paper Figure 2).

Litschko et al. (2022) print, per language pair, the pre-ranker's MAP and each composed reranker's,
with the ranking module's parameter count and an "Avg" column; a star marks a reranker that differs
from the pre-ranker by an unpaired two-sided t-test (p <= 0.05). Figure 2 plots MAP against the
ranking module's reduction factor. The numbers come from ``peftir.reports.cells`` (means of the runs'
metric means, the runs and per-query values behind each) and the tables are laid out by
``peftir.reports.tables``, so both papers' reports share their arithmetic, file formats and audit
(``peftir.clir.audit``). Here: which metrics files make which cell, and the authors' test.
"""
from __future__ import annotations

import json
import os
from typing import Sequence

import pandas as pd

from ..evaluation.stats import star, ttest_two_sided
from ..files import atomic_write, write_json
from .contract import ARTEFACTS, AVG, AVG_LABEL, NMT_BM25, ranking_key
from ..provenance.records import sha256
from ..reports.cells import (METHOD_ROW, REFERENCE_ROW, MetricFiles, RunRecord, _reference_cell, _where, format_count,
                             json_p, run_cell)
from ..reports.tables import latex_escape, render_latex, write_table

ROW_TITLE = "Model"
GROUPS = {"full": "Full fine-tuning", "adapter": "Ranking adapter (RA)", "sftm": "Ranking mask (RM)"}
TTEST = ("unpaired two-sided Student t-test with pooled variance (scipy.stats.ttest_ind, equal_var=True) of the "
         "cell's per-query values, pooled over its runs, against the pre-ranker's in the same column; * p <= 0.05")

RunKey = tuple[str, str, str, int]      # (pair, system, ranking, seed): one composed reranker's evaluation
# Table 1's NMT + BM25 baseline: BM25 of the user's query translations, never tested (a baseline, as the pre-ranker)
TRANSLATED_ROW = "translated"


def p_note(metric: str) -> str:
    """The caption's note on the stars: the authors' test and, for AP, why per-query AP is what they pool."""
    why = (" (the authors pool precision at each relevant document's rank; with one relevant document per query, "
           "as in the embedded collection, that is AP)") if metric == "AP" else ""
    return (rf"$^{{*}}p \le 0.05$, unpaired two-sided t-test of per-query {latex_escape(metric)} "
            f"against the pre-ranker{why}")


def latex_options(layout: dict) -> dict[str, str]:
    """What ``tables.render_latex`` needs beyond the cells for a CLIR table: the table rule and the audit's
    re-rendering both take it from here, so they cannot disagree."""
    return {"note": p_note(layout["metric"]), "row_title": ROW_TITLE}


def _reports(layout: dict) -> str:
    """A report and what it shows, for the error naming a file it was given but does not show."""
    return f"{layout['name']} (pairs {[pair for pair, _ in layout['columns']]}, seeds {layout['seeds']}, " \
           f"pre-ranker {layout['prerank']['system']!r})"


def module_parameters(layout: dict, summaries: list[str], rankings: list[str]) -> dict[str, int]:
    """Each ranking module's parameter count (``module_parameters`` of its training summaries), which every
    seed must agree on; a summary the layout does not expect, or one missing, is a ValueError naming it."""
    expected = {(ranking, seed) for ranking in rankings for seed in layout["seeds"]}
    found: dict[tuple[str, int], int] = {}
    for path in dict.fromkeys(summaries):
        kind, wildcards = ARTEFACTS.match(path) or ("", {})
        key = (wildcards.get("ranking"), int(wildcards.get("seed", -1)))
        if kind != "ranking_summary" or key not in expected:
            raise ValueError(f"{path}: not the summary of a ranking module that {_reports(layout)} shows")
        with open(path) as handle:
            found[key] = int(json.load(handle)["module_parameters"])
    missing = sorted(expected - set(found))
    if missing:
        raise ValueError(f"{layout['name']}: no ranking module summary for (ranking, seed) {missing[0]}"
                         f" ({len(missing)} missing)")
    counts: dict[str, int] = {}
    for ranking in rankings:
        seen = {found[ranking, seed] for seed in layout["seeds"]}
        if len(seen) != 1:
            raise ValueError(f"the seeds of ranking module {ranking!r} disagree on its parameters: {sorted(seen)}")
        counts[ranking] = seen.pop()
    return counts


def system_runs(layout: dict, metrics: list[str], series: list[tuple[str, str]],
                counts: dict[str, int]) -> dict[RunKey, RunRecord]:
    """The metrics file of every (pair, system, ranking, seed) the layout expects for ``series`` of
    (system, ranking); a file it does not expect, two files of one run, or a run without one is a ValueError
    naming it."""
    expected = {(pair, system, ranking, seed) for pair, _ in layout["columns"] for system, ranking in series
                for seed in layout["seeds"]}
    found: dict[RunKey, RunRecord] = {}
    for path in dict.fromkeys(metrics):
        kind, wildcards = ARTEFACTS.match(path) or ("", {})
        key = (wildcards.get("pair"), wildcards.get("system"), wildcards.get("ranking"), int(wildcards.get("seed", -1)))
        if kind != "clir_metrics" or wildcards["prerank"] != layout["prerank"]["system"] or key not in expected:
            raise ValueError(f"{path}: not a metrics file of a run that {_reports(layout)} shows")
        if key in found:
            raise ValueError(f"{path} and {found[key].metrics_file} are both (pair, system, ranking, seed) {key}")
        found[key] = RunRecord(dataset=key[0], ranker=key[2], method=key[1], fold=wildcards["fold"], seed=key[3],
                               metrics_file=path, trainable_parameters=counts[key[2]])
    missing = sorted(expected - set(found))
    if missing:
        raise ValueError(f"{layout['name']}: no metrics file for (pair, system, ranking, seed) {missing[0]}"
                         f" ({len(missing)} missing)")
    return found


def prerank_files(layout: dict, prerank: list[str]) -> dict[str, str]:
    """The pre-ranker's metrics file of each pair; one the layout does not expect, or one missing, is a ValueError."""
    pairs = [pair for pair, _ in layout["columns"]]
    found: dict[str, str] = {}
    for path in dict.fromkeys(prerank):
        kind, wildcards = ARTEFACTS.match(path) or ("", {})
        pair = wildcards.get("pair")
        if kind != "clir_prerank_metrics" or wildcards["prerank"] != layout["prerank"]["system"] or pair not in pairs:
            raise ValueError(f"{path}: not a metrics file of the pre-ranker that {_reports(layout)} shows")
        if pair in found:
            raise ValueError(f"{path} and {found[pair]} are both the pre-ranker's metrics of {pair}")
        found[pair] = path
    missing = [pair for pair in pairs if pair not in found]
    if missing:
        raise ValueError(f"{layout['name']}: no metrics file of the pre-ranker {layout['prerank']['system']!r} "
                         f"for pair {missing[0]!r}")
    return found


def _pairs(layout: dict, column: str) -> list[str]:
    """The pairs a column averages: its own, or every pair for Avg."""
    return [pair for pair, _ in layout["columns"]] if column == AVG else [column]


def _columns(layout: dict) -> list[tuple[str, str]]:
    return [(pair, label) for pair, label in layout["columns"]] + [(AVG, AVG_LABEL)]


def with_pairs(cell: dict) -> dict:
    """``cell`` with each run's language pair named (from its metrics file's path), so an average over pairs, whose
    query ids recur in every pair, is paired query by query as (pair, query) (``peftir.evaluation.significance``)."""
    for run in cell["runs"]:
        run["pair"] = (ARTEFACTS.match(run["metrics_file"]) or ("", {}))[1].get("pair")
    return cell


def prerank_cell(layout: dict, files: dict[str, str], column: str, column_label: str, metrics: MetricFiles) -> dict:
    """The pre-ranker's cell of a column: its reference row, never tested (the rerankers are tested against it)."""
    system, metric = layout["prerank"]["system"], layout["metric"]
    paths = [files[pair] for pair in _pairs(layout, column)]
    return (with_pairs(_reference_cell(system, {column: paths}, column, metric, metrics))
            | _where(REFERENCE_ROW, "", "", system, layout["prerank"]["label"], None, "-", column, column_label,
                     metric))


def translated_files(layout: dict, translated: list[str]) -> dict[str, str]:
    """The NMT + BM25 metrics file of each pair the user translated; one the layout does not expect, or one
    missing, is a ValueError naming it."""
    given = [pair for pair, path in layout["nmt_bm25"]["translations"].items() if path]
    found: dict[str, str] = {}
    for path in dict.fromkeys(translated):
        kind, wildcards = ARTEFACTS.match(path) or ("", {})
        if kind != "clir_translated_metrics" or wildcards["pair"] not in given:
            raise ValueError(f"{path}: not a metrics file of the NMT + BM25 row that {_reports(layout)} shows")
        found[wildcards["pair"]] = path
    missing = [pair for pair in given if pair not in found]
    if missing:
        raise ValueError(f"{layout['name']}: no NMT + BM25 metrics file for pair {missing[0]!r}")
    return found


def caption(layout: dict) -> str:
    """The table's caption; with an NMT + BM25 row that lacks translations, what its dashes mean and the config key
    that takes them (the audit re-renders the LaTeX from the layout, so both say the same)."""
    row = layout.get("nmt_bm25")
    missing = [label for pair, label in layout["columns"] if row and not row["translations"][pair]]
    if not missing:
        return layout["caption"]
    return (f"{layout['caption']} {row['label']} (-): no translation model installs here and no translated queries "
            f"were given for {', '.join(missing)}; set {row['key']}.PAIR to a file of the pair's test queries "
            f"machine-translated into the documents' language (query id, tab, text; one query a line).")


def translated_cell(layout: dict, files: dict[str, str], column: str, column_label: str,
                    metrics: MetricFiles) -> dict:
    """The NMT + BM25 cell of a column: the mean of BM25's metric on the user's translations over the column's
    pairs (each run traced to the translations file's sha256), or "-" with a note naming the config key when a
    pair of the column has no translations."""
    row, metric = layout["nmt_bm25"], layout["metric"]
    key = row["key"]
    where = _where(TRANSLATED_ROW, "", "", NMT_BM25, row["label"], None, "-", column, column_label, metric)
    pairs = _pairs(layout, column)
    missing = [pair for pair in pairs if pair not in files]
    if missing:
        return {"method": NMT_BM25, "value": None, "printed": "-", "stars": "", "p_value": None,
                "rounding": None, "per_seed": None, "ttest": None, "candidates": None, "runs": [],
                "note": f"not run: needs the pair's test queries translated into the documents' language "
                        f"({', '.join(key + '.' + pair for pair in missing)} not given)"} | where
    cell = with_pairs(_reference_cell(NMT_BM25, {column: [files[pair] for pair in pairs]}, column, metric, metrics))
    for run, pair in zip(cell["runs"], pairs):
        path = row["translations"][pair]
        run["translations"] = {"file": path, "sha256": sha256(path)}
    return cell | {"note": f"BM25 of the user's query translations ({key})"} | where


def system_cell(layout: dict, row: dict, ranking: str, runs: dict[RunKey, RunRecord], column: str,
                column_label: str, metrics: MetricFiles) -> dict:
    """A reranker's cell of a column: the mean of its runs' metric means over the column's pairs × seeds."""
    records = [runs[pair, row["system"], ranking, seed] for pair in _pairs(layout, column) for seed in layout["seeds"]]
    count = records[0].trainable_parameters
    return (with_pairs(run_cell(records, layout["metric"], metrics))
            | _where(METHOD_ROW, GROUPS[row["module"]], "", row["system"], row["label"], count, format_count(count),
                     column, column_label, layout["metric"]))


def pooled(cell: dict) -> list[float]:
    """A cell's per-query values over all its runs, each query once per run: the authors' unpaired sample."""
    return [value for run in cell["runs"] for _, value in sorted(run["per_query"].items())]


def star_against_prerank(cell: dict, prerank: dict) -> None:
    """Star ``cell`` by the authors' test of its per-query values against the pre-ranker's in its column."""
    values, baseline = pooled(cell), pooled(prerank)
    p = json_p(ttest_two_sided(values, baseline))
    cell["p_value"], cell["stars"] = p, star(p)
    cell["ttest"] = {"test": TTEST, "against": prerank["cell"], "n": len(values), "baseline_n": len(baseline),
                     "p_value": p}


def clir_cells(layout: dict, metrics: list[str], prerank: list[str], summaries: list[str],
               translated: Sequence[str] = ()) -> list[dict]:
    """Every printed number of a CLIR table in print order: the pre-ranker's row, the NMT + BM25 row where the
    layout has one (``translated``: its metrics files), then each system's row in layout order; per row the pairs'
    columns, then Avg. Cells have the keys of ``cells.table_cells``' and a ``note`` (why a cell is "-", or what
    it ranks)."""
    series = [(row["system"], row["ranking"]) for row in layout["rows"]]
    counts = module_parameters(layout, summaries, [ranking for _, ranking in series])
    runs = system_runs(layout, metrics, series, counts)
    files, reference = MetricFiles(), prerank_files(layout, prerank)
    baselines = [prerank_cell(layout, reference, column, label, files) for column, label in _columns(layout)]
    cells = list(baselines)
    if "nmt_bm25" in layout:
        found = translated_files(layout, list(translated))
        cells += [translated_cell(layout, found, column, label, files) for column, label in _columns(layout)]
    for row in layout["rows"]:
        for (column, label), baseline in zip(_columns(layout), baselines):
            cell = system_cell(layout, row, row["ranking"], runs, column, label, files)
            star_against_prerank(cell, baseline)
            cells.append(cell)
    return [{**cell, "note": cell.get("note")} for cell in cells]


def make_clir_table(layout: dict, metrics: list[str], prerank: list[str], summaries: list[str], tex: str,
                    json_path: str, csv_path: str, translated: Sequence[str] = ()) -> None:
    """The ``clir_table`` rule: one table (LaTeX, JSON twin, CSV) from its runs', the pre-ranker's, the ranking
    modules' and the NMT + BM25 row's files."""
    frame = pd.DataFrame(clir_cells(layout, metrics, prerank, summaries, translated), dtype=object)
    write_table(frame, layout["name"], caption(layout), tex, json_path, csv_path, **latex_options(layout))


def render_clir_latex(frame: pd.DataFrame, layout: dict) -> str:
    """The LaTeX ``make_clir_table`` writes for these cells (what the audit compares the .tex with)."""
    return render_latex(frame, layout["name"], caption(layout), **latex_options(layout))


def build_clir_figure(layout: dict, metrics: list[str], prerank: list[str], summaries: list[str]) -> dict:
    """Figure 2 as the JSON twin it is drawn from: per system row a line of points, one per reduction factor
    (mean over pairs × seeds, with its runs and module size), and the pre-ranker's mean over the pairs."""
    factors = layout["reduction_factors"]
    series = [(row["system"], ranking_key(row["module"], rf)) for row in layout["rows"] for rf in factors]
    counts = module_parameters(layout, summaries, list(dict.fromkeys(ranking for _, ranking in series)))
    runs = system_runs(layout, metrics, series, counts)
    files = MetricFiles()
    lines = []
    for row in layout["rows"]:
        points = []
        for rf in factors:
            ranking = ranking_key(row["module"], rf)
            point = system_cell(layout, row, ranking, runs, AVG, AVG_LABEL, files)
            # named by the factor, not the module: monoBERT's one module (``full``) is a point at every factor
            points.append(point | {"cell": f"{row['system']}:rf{rf}:{AVG}:{layout['metric']}",
                                   "reduction_factor": rf, "ranking": ranking})
        lines.append({"system": row["system"], "label": row["label"], "points": points})
    return {"name": layout["name"], "caption": layout["caption"], "metric": layout["metric"],
            "reduction_factors": factors, "lines": lines,
            "prerank": prerank_cell(layout, prerank_files(layout, prerank), AVG, AVG_LABEL, files)}


def figure_points(figure: dict) -> list[dict]:
    """Every number a figure plots, as cells: the pre-ranker's mean, then each line's points."""
    return [figure["prerank"]] + [point for line in figure["lines"] for point in line["points"]]


def draw_clir(figure: dict):
    """One panel: a line per system over the reduction factors (log2 axis), the pre-ranker dashed."""
    import matplotlib

    matplotlib.use("Agg")   # jobs have no display
    from matplotlib import pyplot as plt
    from matplotlib.ticker import NullLocator

    fig, axis = plt.subplots(figsize=(4.4, 3.3))
    for number, line in enumerate(figure["lines"]):
        axis.plot([point["reduction_factor"] for point in line["points"]],
                  [point["value"] for point in line["points"]], marker="o", label=line["label"],
                  color=plt.cm.tab10.colors[number % 10])
    axis.axhline(figure["prerank"]["value"], linestyle="--", color="0.4", label=figure["prerank"]["label"])
    axis.set_xscale("log", base=2)
    axis.set_xticks(figure["reduction_factors"], [str(rf) for rf in figure["reduction_factors"]])
    axis.xaxis.set_minor_locator(NullLocator())
    axis.set_xlabel("Reduction factor of the ranking module")
    axis.set_ylabel(f"{figure['metric']} (mean over pairs and seeds)")
    axis.legend(fontsize=7)
    fig.tight_layout()
    return fig


def drawn(figure: dict) -> tuple[bytes, bytes]:
    """The figure's PDF and PNG, the same bytes on every redraw (``figures.rendered``)."""
    from ..reports.figures import rendered

    return rendered(draw_clir(figure))


def make_clir_figure(layout: dict, metrics: list[str], prerank: list[str], summaries: list[str], pdf: str, png: str,
                     json_path: str) -> None:
    """The ``clir_figure`` rule: Figure 2 (PDF, PNG, JSON twin), each written atomically."""
    figure = build_clir_figure(layout, metrics, prerank, summaries)
    for path, content in zip((pdf, png), drawn(figure)):
        write_bytes(path, content)
    write_json(json_path, figure)


def write_bytes(path: str | os.PathLike, content: bytes) -> None:
    """A drawing's bytes, written atomically."""
    with atomic_write(path, "wb") as handle:
        handle.write(content)

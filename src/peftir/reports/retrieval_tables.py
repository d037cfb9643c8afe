"""The first-stage retrieval papers' tables (DPTDR, Condenser; Adapters-SPLADE): rows of retrievers, columns of
metrics or settings.

A table's config names rows and columns; each cell is the row's settings with the column's on top (a dataset,
a backbone, a retriever method, the negatives, a metric), so one layout serves the papers' tables: FT vs DPT
with and without RIP and UNM, prompt lengths, reparametrisation, the UNM ablation, backbones, the low-data
columns of Condenser's Table 5 (a method per training-query budget), SPLADE's methods and backbones. A trained
retriever's cell is the mean of its runs (folds × seeds) as in the other papers' tables (``peftir.reports.cells``);
BM25's and an untrained backbone's are means over the folds. A SPLADE cell may search another collection than it
trained on (``target``: TREC DL, BEIR), and its R-FLOPS is a metric like the others (``peftir.evaluation.metrics.evaluate_scoped``).
DPTDR Table 8's alignment and uniformity (``peftir.dense.representation_geometry``) come from geometry files, not
runs: printed × 100 to one decimal as the paper prints them, and never tested (a property of the vectors).
The dense papers test nothing, and Adapters-SPLADE names a t-test without saying paired; we mark a trained
retriever that differs from the table's baseline row by a paired two-sided t-test over (fold, query), seeds averaged
(* p ≤ 0.05), and say so in the caption. A row copied from a paper (``reported``) is printed with a dagger and its
source, never as ours.
"""
from __future__ import annotations

import json
import math
from statistics import fmean

import pandas as pd
from scipy import stats as scipy_stats

from ..evaluation.stats import star
from ..contract.cells import retrieval_cell_id
from ..contract.measures import ALIGNMENT, GEOMETRY_METRICS, R_FLOPS
from ..contract.retrieval import retrieval_cell, searched_collection
from ..contract.wildcards import Artefacts
from .cells import (METHOD_ROW, REFERENCE_ROW, MetricFiles, RunRecord, _reference_cell, format_count, json_p,
                    run_cell)
from .tables import latex_escape, render_latex, write_table

REPORTED_ROW = "reported"
MEAN = "mean"                  # a ``mean_of`` column's metric name
ROW_TITLE = "Retriever"
TTEST = ("paired two-sided t-test (scipy.stats.ttest_rel) of the cell's per-query values against the baseline "
         "row's, each query's value its mean over the seeds, paired by query; * p <= 0.05 (ours: the dense papers test nothing; Adapters-SPLADE's "
         "t-test is not said to be paired)")
DAGGER = "†"
# DPTDR Table 8's alignment and uniformity (``peftir.dense.representation_geometry``): the geometry files by kind,
# with the wildcards that name a cell's; printed × 100 to one decimal as the paper prints them, never tested
GEOMETRY_FILES = {"untrained_geometry": ("dataset", "backbone"),
                  "dense_geometry": ("dataset", "backbone", "retriever", "negatives")}
GEOMETRY_ROUNDING = "1 decimal place (Python '.1f') of 100 × the mean over runs, as DPTDR Table 8 prints it"
UNTESTED = ("Wang & Isola's representation measure of the vectors (lower is better): no t-test and no star, it is "
            "not a per-query effectiveness score")


def note(layout: dict) -> str:
    """The caption's note: the test (when there is a baseline) and what a dagger means."""
    parts = []
    if layout["baseline"]:
        parts.append(rf"$^{{*}}p \le 0.05$, paired two-sided t-test of per-query values against "
                     f"{latex_escape(layout['baseline'])} (ours, not the papers')")
    if any(row.get("reported") for row in layout["rows"]):
        parts.append(r"$^{\dagger}$ copied from the paper named in the JSON twin, not reproduced here")
    if any(settings.get("metric") in GEOMETRY_METRICS for *_, settings in cell_settings(layout)):
        parts.append(r"alignment and uniformity $\times 100$ (Wang \& Isola 2020; lower is better), untested")
    return "; ".join(parts) or "means over folds and seeds"


def cell_settings(layout: dict) -> list[tuple[int, dict, int, dict, dict]]:
    """(row index, row, column index, column, the cell's settings) in print order: the column's win."""
    return [(i, row, j, column, retrieval_cell(row, column))
            for i, row in enumerate(layout["rows"]) for j, column in enumerate(layout["columns"])]


def _retriever_key(cell: dict) -> tuple:
    """A trained retriever's runs by what names them, with the collection whose queries they searched (a dense
    retriever's own, or TREC DL 2019's in the same documents)."""
    if "reranker" in cell:
        return "rerank", searched_collection(cell), cell["dataset"], cell["reranker"]
    if "splade" in cell:
        return "splade", searched_collection(cell), cell["dataset"], cell["backbone"], cell["splade"]
    return searched_collection(cell), cell["dataset"], cell["backbone"], cell["retriever"], cell["negatives"]


# a run's training summary, by the kind of its metrics file
SUMMARIES = {"dense_metrics": "retriever_summary", "dense_target_metrics": "retriever_summary",
             "splade_metrics": "splade_summary", "reranked_metrics": "reranker_summary"}
TRAINED_AS = ("splade", "retriever", "reranker")       # the wildcard naming a trained run's method


def _trained(path: str) -> tuple[int, float | None, int | None]:
    """A training summary's parameters as the papers count them: those the trained model keeps (``kept_parameters``:
    a DPT prompt set without the reparametrisation MLP that generated it, which is thrown away), their share of the
    model where the summary says (SPLADE's), and those training updated where they are more (the MLP's included)."""
    with open(path) as handle:
        summary = json.load(handle)
    trained = int(summary["trainable_parameters"])
    kept = int(summary.get("kept_parameters", trained))
    return kept, summary.get("percent_trainable"), trained if trained != kept else None


def _summary_of(path: str, summary: str, counts: dict) -> str:
    """A trained run's summary (its trainable parameters), which must be among the inputs."""
    if summary not in counts:
        raise ValueError(f"{path}: its retriever's summary {summary} is not among the inputs")
    return summary


def _geometry_key(named: dict, untrained: bool) -> tuple:
    """The geometry files of a cell, or of a file's wildcards: an untrained backbone's, or a trained retriever's."""
    kind = "untrained_geometry" if untrained else "dense_geometry"
    return ("geometry", *(named[key] for key in GEOMETRY_FILES[kind]))


def index_files(layout: dict, metrics: list[str], summaries: list[str],
                artefacts: Artefacts) -> tuple[dict, dict, dict]:
    """The given files by what they are: trained retrievers' runs by ``_retriever_key``, BM25's and untrained
    backbones' per-fold files; a file of another kind, or a run without its summary, is a ValueError."""
    runs: dict[tuple, list[RunRecord]] = {}
    references: dict[tuple, list[str]] = {}
    counts = {}
    for path in summaries:
        kind, wildcards = artefacts.match(path) or ("", {})
        if kind not in SUMMARIES.values():
            raise ValueError(f"{path}: not a retriever's training summary")
        counts[path] = _trained(path)
    for path in metrics:
        kind, wildcards = artefacts.match(path) or ("", {})
        if kind in SUMMARIES:
            summary = _summary_of(path, getattr(artefacts, SUMMARIES[kind]).format(**wildcards), counts)
            key = _retriever_key(wildcards)
            method = next(wildcards[name] for name in TRAINED_AS if name in wildcards)
            runs.setdefault(key, []).append(RunRecord(
                dataset=wildcards["dataset"], ranker=wildcards.get("backbone", ""), method=method,
                fold=wildcards["fold"], seed=int(wildcards["seed"]), metrics_file=path,
                trainable_parameters=counts[summary][0]))
            counts[path] = counts[summary]
        elif kind == "dense_bm25_metrics":
            references.setdefault((wildcards["dataset"], "bm25"), []).append(path)
        elif kind == "splade_bm25_metrics":
            references.setdefault((wildcards["target"], "bm25"), []).append(path)
        elif kind == "untrained_metrics":
            references.setdefault((wildcards["dataset"], "untrained", wildcards["backbone"]), []).append(path)
        elif kind in GEOMETRY_FILES:
            references.setdefault(_geometry_key(wildcards, kind == "untrained_geometry"), []).append(path)
            if kind == "dense_geometry":
                counts[path] = counts[_summary_of(path, artefacts.retriever_summary.format(**wildcards), counts)]
        else:
            raise ValueError(f"{path}: not a trained retriever's, BM25's or an untrained backbone's metrics file")
    return runs, references, counts


def _runs_of(layout: dict, runs: dict, cell: dict) -> list[RunRecord]:
    found = sorted(runs.get(_retriever_key(cell), []), key=lambda r: (r.seed, r.fold))
    expected = {(fold, seed) for fold in layout["folds"][cell["dataset"]] for seed in layout["seeds"]}
    if {(r.fold, r.seed) for r in found} != expected:
        raise ValueError(f"{layout['name']}: retriever {_retriever_key(cell)} has runs "
                         f"{sorted((r.fold, r.seed) for r in found)}, the table needs (fold, seed) {sorted(expected)}")
    return found


def _reference_key(cell: dict) -> tuple:
    if cell["reference"] == "bm25":
        return searched_collection(cell), "bm25"
    return cell["dataset"], "untrained", cell["backbone"]


def _printed_count(count: int | None, percent: float | None, trained: int | None = None) -> str:
    """The parameters column: the paper's count of what the model keeps (``format_count``), with the trainable
    share where known, and what training updated beside it where that was more ("1.6M; 26M trained")."""
    if count is None:
        return "-"
    return (format_count(count) + ("" if percent is None else f" ({percent:.2f}%)")
            + ("" if trained is None else f"; {format_count(trained)} trained"))


def _where(row_index: int, row: dict, column: dict, metric: str, kind: str, count: int | None,
           percent: float | None = None, trained: int | None = None) -> dict:
    return {"cell": retrieval_cell_id(row, column), "row_kind": kind, "group": "", "ranker": "",
            "row": str(row_index), "label": row["label"] + (DAGGER if kind == REPORTED_ROW else ""),
            "trainable_parameters": count, "trained_parameters": trained,
            "printed_parameters": _printed_count(count, percent, trained),
            "dataset": column["label"], "dataset_label": column["label"], "metric": metric,
            "source": (row.get("reported") or {}).get("source")}


def _reported(row: dict, column_index: int) -> dict:
    value = row["reported"]["values"][column_index]
    return {"method": None, "value": value, "printed": "-" if value is None else f"{value:g}", "stars": "",
            "p_value": None, "rounding": "as printed in the source", "per_seed": None, "runs": None, "ttest": None,
            "candidates": None}


def _not_measured(system: str) -> dict:
    return {"method": system, "value": None, "printed": "-", "stars": "", "p_value": None,
            "rounding": "not measured: R-FLOPS is a learned sparse vector's", "per_seed": None, "runs": None,
            "ttest": None, "candidates": None}


def paired_values(cell: dict, baseline: dict) -> tuple[list[float], list[float]]:
    """The two cells' per-query values paired by (fold, query), each the query's mean over the cell's seeds (seeds
    are not extra queries); both must cover the same queries."""
    def keyed(c: dict) -> dict:
        values: dict[tuple, list[float]] = {}
        for run in c["runs"]:
            for qid, value in run["per_query"].items():
                values.setdefault((run["fold"], qid), []).append(value)
        return {key: fmean(found) for key, found in values.items()}

    mine, theirs = keyed(cell), keyed(baseline)
    if set(mine) != set(theirs):
        raise ValueError(f"{cell['cell']} and its baseline {baseline['cell']} cover different (fold, query)")
    keys = sorted(mine)
    return [mine[k] for k in keys], [theirs[k] for k in keys]


def paired_p(values: list[float], baseline: list[float]) -> float:
    """Two-sided paired t-test p-value; NaN where undefined (fewer than two pairs, or no difference at all)."""
    if len(values) < 2 or all(a == b for a, b in zip(values, baseline)):
        return math.nan
    return float(scipy_stats.ttest_rel(values, baseline).pvalue)


def test_against(cell: dict, baseline: dict) -> None:
    p = json_p(paired_p(*paired_values(cell, baseline)))
    cell["p_value"], cell["stars"] = p, star(p)
    cell["ttest"] = {"test": TTEST, "against": baseline["cell"], "n": len(paired_values(cell, baseline)[0]),
                     "p_value": p}


def dense_cells(layout: dict, metrics: list[str], summaries: list[str], artefacts: Artefacts) -> list[dict]:
    """Every printed number of a dense table in print order (row by row, column by column)."""
    runs, references, counts = index_files(layout, metrics, summaries, artefacts)
    files, cells = MetricFiles(), []
    for i, row, j, column, settings in cell_settings(layout):
        metric = settings.get("metric", MEAN)
        if settings.get("reported"):
            cell = _reported(row, j) | _where(i, row, column, metric, REPORTED_ROW, None)
        elif column.get("mean_of"):
            cell = {}                     # the mean of the row's other cells, below, once they are made
        elif settings.get("reference") and metric == R_FLOPS:
            cell = _not_measured(settings["reference"]) | _where(i, row, column, metric, REFERENCE_ROW, None)
        elif metric in GEOMETRY_METRICS:
            cell = _geometry_cell(layout, references, settings, metric, files, artefacts)
            cell |= _where(i, row, column, metric, *((REFERENCE_ROW, None) if settings.get("reference") else
                                                     (METHOD_ROW, *counts[cell["runs"][0]["metrics_file"]])))
        elif settings.get("reference"):
            key = _reference_key(settings)
            paths = sorted(references.get(key, []))
            if len(paths) != len(layout["folds"][key[0]]):
                raise ValueError(f"{layout['name']}: reference {key} has {len(paths)} metrics files, one per fold "
                                 f"{layout['folds'][key[0]]} expected")
            cell = (_reference_cell(settings["reference"], {column["label"]: paths}, column["label"], metric, files)
                    | _where(i, row, column, metric, REFERENCE_ROW, None))
            for run, path in zip(cell["runs"], paths):
                run["fold"] = artefacts.match(path)[1]["fold"]
        else:
            records = _runs_of(layout, runs, settings)
            cell = run_cell(records, metric, files) | _where(i, row, column, metric, METHOD_ROW,
                                                              *counts[records[0].metrics_file])
        cells.append(cell)
    columns = len(layout["columns"])
    for index, (i, row, j, column, _) in enumerate(cell_settings(layout)):
        if column.get("mean_of") and not row.get("reported"):
            shown = {c["dataset"]: c for c in cells[i * columns:(i + 1) * columns] if c}
            kind = next(c["row_kind"] for c in shown.values())
            cells[index] = _mean_cell([shown[label] for label in column["mean_of"]]) | _where(
                i, row, column, MEAN, kind, shown[column["mean_of"][0]]["trainable_parameters"])
            cells[index]["printed_parameters"] = shown[column["mean_of"][0]]["printed_parameters"]
    if layout["baseline"]:
        base_row = next(i for i, row in enumerate(layout["rows"]) if row["label"] == layout["baseline"])
        for index, cell in enumerate(cells):
            baseline = cells[base_row * columns + index % columns]
            if cell["row_kind"] == METHOD_ROW and cell is not baseline and baseline["row_kind"] == METHOD_ROW \
                    and cell["metric"] != MEAN and cell["metric"] not in GEOMETRY_METRICS:
                test_against(cell, baseline)
    # every cell has each key (the JSON twin's), and the collection it scores (a mean over columns: none)
    return [{**cell, "note": cell.get("note"), "collection": None if column.get("mean_of") else
             searched_collection(settings)} for cell, (_, _, _, column, settings) in zip(cells, cell_settings(layout))]


def _geometry_cell(layout: dict, references: dict, settings: dict, metric: str, files: MetricFiles,
                   artefacts: Artefacts) -> dict:
    """An alignment or uniformity cell: the mean over its geometry files (an untrained backbone's per fold, a
    retriever's per fold × seed) of each file's value, alignment's per-query values kept; untested."""
    untrained = settings.get("reference") == "untrained"
    key = _geometry_key(settings, untrained)
    paths = sorted(references.get(key, []))
    expected = len(layout["folds"][settings["dataset"]]) * (1 if untrained else len(layout["seeds"]))
    if len(paths) != expected:
        raise ValueError(f"{layout['name']}: {key} has {len(paths)} geometry files, the table needs {expected}")
    runs = [_geometry_run(path, metric, files, artefacts) for path in paths]
    mean = fmean(run["value"] for run in runs)
    return {"method": "untrained" if untrained else settings["retriever"], "value": mean,
            "printed": f"{100 * mean:.1f}", "stars": "", "p_value": None, "rounding": GEOMETRY_ROUNDING,
            "per_seed": None, "runs": runs, "ttest": None, "candidates": None, "note": UNTESTED}


def _geometry_run(path: str, metric: str, files: MetricFiles, artefacts: Artefacts) -> dict:
    """One geometry file's value in a cell: alignment with the per-query values it is the mean of; uniformity, a
    property of the passages together, with none."""
    named = artefacts.match(path)[1]
    return {"fold": named["fold"], **({"seed": int(named["seed"])} if "seed" in named else {}), "metrics_file": path,
            "value": files.mean(path, metric),
            "per_query": files.per_query(path, ALIGNMENT) if metric == ALIGNMENT else None}


def _mean_cell(averaged: list[dict]) -> dict:
    """A row's mean over the columns a ``mean_of`` column names (Table 3's mean over BEIR): untested, "-" when one
    of them is; ``candidates`` holds the values averaged, by column."""
    values = [cell["value"] for cell in averaged]
    mean = None if None in values else fmean(values)
    return {"method": MEAN, "value": mean, "printed": "-" if mean is None else f"{mean:.4f}", "stars": "",
            "p_value": None, "rounding": "4 decimal places of the mean of the row's cells it names", "per_seed": None,
            "runs": None, "ttest": None, "candidates": {cell["dataset"]: cell["value"] for cell in averaged}}


def latex_options(layout: dict) -> dict[str, str]:
    return {"note": note(layout), "row_title": ROW_TITLE}


def make_dense_table(layout: dict, metrics: list[str], summaries: list[str], artefacts: Artefacts, tex: str,
                     json_path: str, csv_path: str) -> None:
    """The ``dense_table`` rule: one table (LaTeX, JSON twin, CSV) from its runs' metrics and summaries."""
    frame = pd.DataFrame(dense_cells(layout, metrics, summaries, artefacts), dtype=object)
    write_table(frame, layout["name"].replace("/", "-"), layout["caption"], tex, json_path, csv_path,
                **latex_options(layout))


def render_dense_latex(frame: pd.DataFrame, layout: dict) -> str:
    """The LaTeX ``make_dense_table`` writes for these cells (what the audit compares the .tex with)."""
    return render_latex(frame, layout["name"].replace("/", "-"), layout["caption"], **latex_options(layout))

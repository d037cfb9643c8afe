"""The paper's result tables (Tables 3-7) and their machine-readable twins.

``build_table`` does all the arithmetic and returns a JSON-ready dict; the
LaTeX and CSV writers only format that dict, so the three outputs cannot
disagree.
"""
from __future__ import annotations

import csv
import json
import math
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean

from .evaluation import read_metrics
from .stats import improvement, stars, ttest_greater
from .trec import atomic_write

P_NOTE = r"$^{*}p \le 0.05$, $^{**}p \le 0.01$ (1-tailed)"
CSV_FIELDS = ["group", "label", "method", "trainable_parameters", "dataset", "metric", "cell_method",
              "value", "printed", "stars", "p_value", "n_runs"]


@dataclass(frozen=True)
class RunRecord:
    """One test-fold evaluation of one trained model."""

    dataset: str
    ranker: str
    method: str
    fold: str
    seed: int
    metrics_file: str
    trainable_parameters: int


@dataclass(frozen=True)
class Row:
    """A method's row; with ``candidates``, a best-of row (Table 5's "LFT (best)"): per column, the
    candidate method with the highest mean, tested against the baseline like any other row."""

    ranker: str
    method: str
    label: str
    candidates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Group:
    """A model block; its row whose method is the baseline (full FT) is what the others are tested against."""

    label: str
    rows: list[Row]


class _MetricFiles:
    """Reads each metrics file once, however many cells use it."""

    def __init__(self) -> None:
        self._cache: dict[str, dict] = {}

    def _read(self, path: str) -> dict:
        if path not in self._cache:
            self._cache[path] = read_metrics(path)
        return self._cache[path]

    def mean(self, path: str, metric: str) -> float:
        means = self._read(path)["mean"]
        if metric not in means:
            raise ValueError(f"{path} has no mean for metric {metric!r}")
        return float(means[metric])

    def per_query(self, path: str, metric: str) -> dict[str, float]:
        return {qid: values[metric] for qid, values in self._read(path)["per_query"].items()}


def format_count(n: int) -> str:
    """Parameter count as the paper prints it: 8K, 0.1M, 0.6M, 1M, 23M, 110M.

    From 10M on, two significant figures: BERT-base's 109,482,240 is the paper's "110M".
    """
    if n < 50_000:
        return f"{round(n / 1000)}K"
    if n < 10_000_000:
        text = f"{n / 1e6:.1f}"
        return (text[:-2] if text.endswith(".0") else text) + "M"
    return f"{int(float(f'{n / 1e6:.2g}'))}M"


ROUNDING = "4 decimal places: Python format '.4f' of the raw mean (round half to even on its binary value)"
TTEST = ("one-tailed Student t-test with pooled variance (scipy.stats.ttest_ind, equal_var=True, "
         "alternative='greater') of the per-seed means (each over the folds) against full FT's; "
         "** p <= 0.01, * p <= 0.05")


def _printed(value: float) -> str:
    return f"{value:.4f}"


def _json_p(p: float | None) -> float | None:
    """Strict JSON has no NaN: an undefined test is stored as null."""
    return None if p is None or math.isnan(p) else p


def _index(records: list[RunRecord]) -> dict[tuple[str, str, str], list[RunRecord]]:
    """Records by (dataset, ranker, method); a repeated (fold, seed) would be counted twice."""
    index: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    seen: set[tuple] = set()
    for record in records:
        key = (record.dataset, record.ranker, record.method, record.fold, record.seed)
        if key in seen:
            raise ValueError(f"duplicate run record {key}")
        seen.add(key)
        index[key[:3]].append(record)
    return index


def _row_runs(index: dict, dataset: str, row: Row) -> list[RunRecord]:
    """A row's runs on one dataset; every seed must cover the same folds or seed means differ in kind."""
    runs = sorted(index.get((dataset, row.ranker, row.method), []), key=lambda r: (r.seed, r.fold))
    if not runs:
        raise ValueError(f"no run records for (dataset={dataset!r}, ranker={row.ranker!r}, "
                         f"method={row.method!r})")
    folds_by_seed = defaultdict(set)
    for run in runs:
        folds_by_seed[run.seed].add(run.fold)
    if len({frozenset(f) for f in folds_by_seed.values()}) > 1:
        raise ValueError(f"seeds of ({dataset}, {row.ranker}, {row.method}) cover different folds: "
                         f"{ {s: sorted(f) for s, f in folds_by_seed.items()} }")
    return runs


def _row_parameters(index: dict, datasets: list[str], row: Row) -> int:
    counts = {r.trainable_parameters for d in datasets
              for r in index.get((d, row.ranker, row.method), [])}
    if len(counts) != 1:
        raise ValueError(f"records of ({row.ranker}, {row.method}) disagree on trainable "
                         f"parameters: {sorted(counts)}")
    return counts.pop()


def _cell(runs: list[RunRecord], dataset: str, metric: str, files: _MetricFiles) -> dict:
    """Mean over all folds x seeds, plus the per-seed means the t-test compares."""
    values = [files.mean(r.metrics_file, metric) for r in runs]
    by_seed: dict[int, list[float]] = defaultdict(list)
    for run, value in zip(runs, values):
        by_seed[run.seed].append(value)
    mean = fmean(values)
    return {
        "dataset": dataset, "metric": metric, "method": runs[0].method, "value": mean, "printed": _printed(mean),
        "stars": "", "p_value": None, "rounding": ROUNDING,
        "per_seed": {str(seed): fmean(v) for seed, v in sorted(by_seed.items())},
        "runs": [{"fold": r.fold, "seed": r.seed, "metrics_file": r.metrics_file, "value": v,
                  "per_query": files.per_query(r.metrics_file, metric)} for r, v in zip(runs, values)],
    }


def _test_against(cell: dict, base: dict) -> None:
    values, baseline = list(cell["per_seed"].values()), list(base["per_seed"].values())
    p = ttest_greater(values, baseline)
    cell["p_value"], cell["stars"] = _json_p(p), stars(p)
    cell["ttest"] = {"test": TTEST, "values": values, "baseline": baseline, "p_value": cell["p_value"]}


def _baseline_index(group: Group, baseline_method: str) -> int:
    found = [i for i, row in enumerate(group.rows) if row.method == baseline_method]
    if len(found) != 1:
        raise ValueError(f"group {group.label!r} needs exactly one {baseline_method!r} row, "
                         f"found {len(found)}")
    return found[0]


def _improvement_row(rows: list[dict], base_at: int) -> list[dict]:
    """Best non-baseline row per column vs the baseline; ties go to the earlier row."""
    entries = []
    for column, base in enumerate(rows[base_at]["cells"]):
        others = [row["cells"][column] for i, row in enumerate(rows) if i != base_at]
        best = max(others, key=lambda cell: cell["value"], default=None)
        percent = None if best is None else improvement(best["value"], base["value"])
        entries.append({
            "dataset": base["dataset"], "metric": base["metric"],
            "best_method": None if best is None else best["method"],
            "percent": percent, "printed": "-" if percent is None else f"{percent:.2f}%",
        })
    return entries


def _best_cell(row: Row, index: dict, dataset: str, metric: str, files: _MetricFiles) -> dict:
    """The candidate with the highest mean in this column (ties: the earlier candidate)."""
    cells = [_cell(_row_runs(index, dataset, Row(row.ranker, method, method)), dataset, metric, files)
             for method in row.candidates]
    best = max(cells, key=lambda cell: cell["value"])
    return {**best, "candidates": {cell["method"]: cell["value"] for cell in cells}}


def _row(row: Row, columns: list[tuple[str, str]], index: dict, files: _MetricFiles) -> dict:
    datasets = sorted({d for d, _ in columns})
    if row.candidates:   # the paper prints "≤ 0.9M": at most the largest candidate's count
        cells = [_best_cell(row, index, d, m, files) for d, m in columns]
        params = max(_row_parameters(index, datasets, Row(row.ranker, m, m)) for m in row.candidates)
        printed = "≤ " + format_count(params)
    else:
        cells = [_cell(_row_runs(index, d, row), d, m, files) for d, m in columns]
        params = _row_parameters(index, datasets, row)
        printed = format_count(params)
    return {"ranker": row.ranker, "method": row.method, "label": row.label, "trainable_parameters": params,
            "printed_parameters": printed, "cells": cells}


def _group(group: Group, columns: list[tuple[str, str]], index: dict, files: _MetricFiles,
           baseline_method: str) -> dict:
    base_at = _baseline_index(group, baseline_method)
    rows = [_row(row, columns, index, files) for row in group.rows]
    for i, row in enumerate(rows):
        if i != base_at:
            for cell, base in zip(row["cells"], rows[base_at]["cells"]):
                _test_against(cell, base)
    return {"label": group.label, "rows": rows, "improvement": _improvement_row(rows, base_at)}


def _reference_row(label: str, files_by_dataset: dict[str, list[str]],
                   columns: list[tuple[str, str]], files: _MetricFiles) -> dict:
    """A fixed system (BM25): mean over its per-fold files, never tested."""
    cells = []
    for dataset, metric in columns:
        paths = files_by_dataset.get(dataset, [])
        if not paths:
            raise ValueError(f"reference row {label!r} has no metrics files for {dataset!r}")
        values = [files.mean(p, metric) for p in paths]
        mean = fmean(values)
        cells.append({"dataset": dataset, "metric": metric, "value": mean,
                      "printed": _printed(mean), "stars": "", "p_value": None, "rounding": ROUNDING,
                      "runs": [{"metrics_file": p, "value": v, "per_query": files.per_query(p, metric)}
                               for p, v in zip(paths, values)]})
    return {"label": label, "cells": cells}


def build_table(name: str, caption: str, groups: list[Group], datasets: list[tuple[str, str]],
                metrics: list[str], records: list[RunRecord],
                reference: dict[str, dict[str, list[str]]],
                baseline_method: str = "full") -> dict:
    """All numbers of one result table, as the JSON twin the writers format."""
    columns = [(dataset, metric) for dataset, _ in datasets for metric in metrics]
    index = _index(records)
    files = _MetricFiles()
    return {
        "name": name,
        "caption": caption,
        "datasets": [{"id": d, "label": label} for d, label in datasets],
        "metrics": list(metrics),
        "reference_rows": [_reference_row(label, by_dataset, columns, files)
                           for label, by_dataset in reference.items()],
        "groups": [_group(g, columns, index, files, baseline_method) for g in groups],
    }


def cells_by_row(records: list[RunRecord], rows: list[Row], columns: list[tuple[str, str]]) -> list[list[dict]]:
    """Each row's cells (mean, per-seed means, runs) for ``columns`` of (dataset, metric), untested:
    what a figure plots."""
    index, files = _index(records), _MetricFiles()
    return [[_cell(_row_runs(index, d, row), d, m, files) for d, m in columns] for row in rows]


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}", "→": r"$\rightarrow$", "≤": r"$\le$"}
_LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    """Labels are plain text; make LaTeX print them verbatim (and the paper's arrows)."""
    return _LATEX_PATTERN.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)


def _latex_value(cell: dict) -> str:
    return cell["printed"] + (f"$^{{{cell['stars']}}}$" if cell["stars"] else "")


def _latex_line(model: str, method: str, params: str, values: list[str]) -> str:
    return " & ".join([model, method, params, *values]) + r" \\"


def _latex_header(table: dict) -> list[str]:
    n_metrics = len(table["metrics"])
    first = [r"\multirow{2}{*}{Model}", r"\multirow{2}{*}{Fine-tuning method}",
             r"\multirow{2}{*}{\# of trainable parameters}"]
    spans, rules = [], []
    for i, dataset in enumerate(table["datasets"]):
        start = 4 + i * n_metrics
        spans.append(rf"\multicolumn{{{n_metrics}}}{{c}}{{{latex_escape(dataset['label'])}}}")
        rules.append(rf"\cmidrule(lr){{{start}-{start + n_metrics - 1}}}")
    metrics = [latex_escape(m) for m in table["metrics"]] * len(table["datasets"])
    return [r"\toprule", " & ".join(first + spans) + r" \\", " ".join(rules),
            _latex_line("", "", "", metrics), r"\midrule"]


def _latex_group(group: dict) -> list[str]:
    height = len(group["rows"]) + 1
    lines = []
    for i, row in enumerate(group["rows"]):
        model = rf"\multirow{{{height}}}{{*}}{{{latex_escape(group['label'])}}}" if i == 0 else ""
        lines.append(_latex_line(model, latex_escape(row["label"]), latex_escape(row["printed_parameters"]),
                                 [_latex_value(c) for c in row["cells"]]))
    lines.append(_latex_line("", r"Improvement (\%)", "-",
                             [latex_escape(e["printed"]) for e in group["improvement"]]))
    return lines


def render_latex(table: dict) -> str:
    """A complete table* float in the layout of the paper's Tables 3-5."""
    n_values = len(table["metrics"]) * len(table["datasets"])
    body = _latex_header(table)
    for row in table["reference_rows"]:
        body.append(_latex_line("", latex_escape(row["label"]), "-",
                                [c["printed"] for c in row["cells"]]))
    if table["reference_rows"]:
        body.append(r"\midrule")
    for i, group in enumerate(table["groups"]):
        if i:
            body.append(r"\midrule")
        body.extend(_latex_group(group))
    body.append(r"\bottomrule")
    return "\n".join([
        r"% Requires \usepackage{booktabs} and \usepackage{multirow}.",
        r"\begin{table*}",
        r"\centering",
        rf"\caption{{{latex_escape(table['caption'])} Note: {P_NOTE}.}}",
        rf"\label{{tab:{table['name']}}}",
        rf"\begin{{tabular}}{{llr{'c' * n_values}}}",
        *body,
        r"\end{tabular}",
        r"\end{table*}",
        "",
    ])


def _csv_rows(table: dict) -> list[dict]:
    rows = []
    for ref in table["reference_rows"]:
        for cell in ref["cells"]:
            rows.append({"group": "reference", "label": ref["label"], "method": "",
                         "trainable_parameters": "", **_csv_cell(cell)})
    for group in table["groups"]:
        for row in group["rows"]:
            for cell in row["cells"]:
                rows.append({"group": group["label"], "label": row["label"],
                             "method": row["method"],
                             "trainable_parameters": row["trainable_parameters"],
                             **_csv_cell(cell)})
    return rows


def _csv_cell(cell: dict) -> dict:
    return {"dataset": cell["dataset"], "metric": cell["metric"], "cell_method": cell.get("method", ""),
            "value": cell["value"],
            "printed": cell["printed"], "stars": cell["stars"],
            "p_value": "" if cell["p_value"] is None else cell["p_value"],
            "n_runs": len(cell["runs"])}


def write_table(table: dict, tex_path: str | os.PathLike, json_path: str | os.PathLike,
                csv_path: str | os.PathLike) -> None:
    """Write the LaTeX table, its JSON twin and a flat CSV (one line per cell), each atomically."""
    with atomic_write(tex_path) as handle:
        handle.write(render_latex(table))
    with atomic_write(json_path) as handle:
        json.dump(table, handle, indent=2, allow_nan=False)
        handle.write("\n")
    with atomic_write(csv_path) as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_csv_rows(table))

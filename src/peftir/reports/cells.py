"""The arithmetic behind every printed number: means over folds and seeds, t-tests, improvements.

A table is a list of cells, one per printed number, in print order (``table_cells``): the
reference rows (BM25, the untrained backbone), then per ranker group its method rows (mean over all folds × seeds, per-seed
means, the one-tailed t-test against the group's full fine-tuning row, the runs and per-query
values behind it) and its "Improvement (%)" row. ``peftir.reports.tables`` lays the cells out;
the audit recomputes them (``peftir.reports.auditor`` and each system's checks on it).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean

from ..contract.cells import IMPROVEMENT, cell_id
from ..evaluation.metrics import read_metrics
from ..evaluation.stats import improvement, stars, ttest_greater

ROUNDING = "4 decimal places: Python format '.4f' of the raw mean (round half to even on its binary value)"
TTEST = ("one-tailed Student t-test with pooled variance (scipy.stats.ttest_ind, equal_var=True, "
         "alternative='greater') of the per-seed means (each over the folds) against full FT's; "
         "** p <= 0.01, * p <= 0.05")
REFERENCE_ROW, METHOD_ROW, IMPROVEMENT_ROW = "reference", "method", "improvement"


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


class MetricFiles:
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


def printed(value: float) -> str:
    return f"{value:.4f}"


def json_p(p: float | None) -> float | None:
    """Strict JSON has no NaN: an undefined test is stored as null."""
    return None if p is None or math.isnan(p) else p


def index_runs(records: list[RunRecord]) -> dict[tuple[str, str, str], list[RunRecord]]:
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


def row_runs(index: dict, dataset: str, ranker: str, method: str) -> list[RunRecord]:
    """A row's runs on one dataset; every seed must cover the same folds or seed means differ in kind."""
    runs = sorted(index.get((dataset, ranker, method), []), key=lambda r: (r.seed, r.fold))
    if not runs:
        raise ValueError(f"no run records for (dataset={dataset!r}, ranker={ranker!r}, method={method!r})")
    folds_by_seed = defaultdict(set)
    for run in runs:
        folds_by_seed[run.seed].add(run.fold)
    if len({frozenset(f) for f in folds_by_seed.values()}) > 1:
        raise ValueError(f"seeds of ({dataset}, {ranker}, {method}) cover different folds: "
                         f"{ {s: sorted(f) for s, f in folds_by_seed.items()} }")
    return runs


def row_parameters(index: dict, datasets: list[str], ranker: str, method: str) -> int:
    counts = {r.trainable_parameters for d in datasets for r in index.get((d, ranker, method), [])}
    if len(counts) != 1:
        raise ValueError(f"records of ({ranker}, {method}) disagree on trainable parameters: {sorted(counts)}")
    return counts.pop()


def run_cell(runs: list[RunRecord], metric: str, files: MetricFiles) -> dict:
    """Mean over all folds × seeds, plus the per-seed means the t-test compares, and the runs behind them."""
    values = [files.mean(r.metrics_file, metric) for r in runs]
    by_seed: dict[int, list[float]] = defaultdict(list)
    for run, value in zip(runs, values):
        by_seed[run.seed].append(value)
    mean = fmean(values)
    return {
        "method": runs[0].method, "value": mean, "printed": printed(mean), "stars": "", "p_value": None,
        "rounding": ROUNDING, "per_seed": {str(seed): fmean(v) for seed, v in sorted(by_seed.items())},
        "runs": [{"fold": r.fold, "seed": r.seed, "metrics_file": r.metrics_file, "value": v,
                  "per_query": files.per_query(r.metrics_file, metric)} for r, v in zip(runs, values)],
        "ttest": None, "candidates": None,
    }


def test_against(cell: dict, baseline: dict) -> None:
    """Star ``cell`` by the paper's t-test of its per-seed means against the baseline's."""
    values, base = list(cell["per_seed"].values()), list(baseline["per_seed"].values())
    p = json_p(ttest_greater(values, base))
    cell["p_value"], cell["stars"] = p, stars(p)
    cell["ttest"] = {"test": TTEST, "against": baseline["cell"], "values": values, "baseline": base, "p_value": p}


def best_cell(index: dict, dataset: str, ranker: str, metric: str, candidates: list[str],
              files: MetricFiles) -> dict:
    """The candidate method with the highest mean in this column (ties: the earlier candidate)."""
    cells = [run_cell(row_runs(index, dataset, ranker, method), metric, files) for method in candidates]
    best = max(cells, key=lambda cell: cell["value"])
    return {**best, "candidates": {cell["method"]: cell["value"] for cell in cells}}


def improvement_cell(cells: list[dict], baseline: dict) -> dict:
    """Best non-baseline cell of a column vs the baseline; ties go to the earlier row; "-" if none beats it."""
    best = max(cells, key=lambda cell: cell["value"], default=None)
    percent = None if best is None else improvement(best["value"], baseline["value"])
    return {"method": None if best is None else best["method"], "value": percent,
            "printed": "-" if percent is None else f"{percent:.2f}%", "stars": "", "p_value": None,
            "rounding": "2 decimal places of (best - full FT) / full FT × 100", "per_seed": None, "runs": None,
            "ttest": None, "candidates": None}


def table_cells(layout: dict, records: list[RunRecord], references: dict[str, dict[str, list[str]]]) -> list[dict]:
    """Every printed number of a table, in print order (see the module's docstring).

    ``layout`` is the table's layout param (``peftir.semi_siamese.contract.report_layout``); ``references`` maps each
    reference system (``bm25``, ``backbone``) and dataset to the system's per-fold metrics files.
    """
    columns = [(dataset, label, metric) for dataset, label in layout["datasets"] for metric in layout["metrics"]]
    datasets = [dataset for dataset, _ in layout["datasets"]]
    index, files = index_runs(records), MetricFiles()
    cells = [_reference_cell(system, references.get(system, {}), dataset, metric, files)
             | _where(REFERENCE_ROW, "", "", system, system_label, None, "-", dataset, label, metric)
             for system, system_label in layout["references"] for dataset, label, metric in columns]
    for group in layout["groups"]:
        ranker, rows = group["ranker"], []
        for row in group["rows"]:
            if row["candidates"]:   # the paper prints "≤ 0.9M": at most the largest candidate's count
                count = max(row_parameters(index, datasets, ranker, m) for m in row["candidates"])
                shown = "≤ " + format_count(count)
                made = [best_cell(index, d, ranker, m, row["candidates"], files) for d, _, m in columns]
            else:
                count = row_parameters(index, datasets, ranker, row["method"])
                shown = format_count(count)
                made = [run_cell(row_runs(index, d, ranker, row["method"]), m, files) for d, _, m in columns]
            rows.append([cell | _where(METHOD_ROW, group["label"], ranker, row["method"], row["label"], count, shown,
                                       d, label, m) for cell, (d, label, m) in zip(made, columns)])
        base = _baseline_row(group, rows, layout["baseline"])
        for row in rows:
            if row is not base:
                for cell, baseline in zip(row, base):
                    test_against(cell, baseline)
        cells += [cell for row in rows for cell in row]
        cells += [improvement_cell([row[i] for row in rows if row is not base], base[i])
                  | _where(IMPROVEMENT_ROW, group["label"], ranker, IMPROVEMENT, "Improvement (%)", None, "-",
                           d, label, m) for i, (d, label, m) in enumerate(columns)]
    return cells


def _reference_cell(system: str, by_dataset: dict[str, list[str]], dataset: str, metric: str,
                    files: MetricFiles) -> dict:
    """A fixed system (BM25, the untrained backbone): mean over its per-fold files, never tested."""
    paths = by_dataset.get(dataset, [])
    if not paths:
        raise ValueError(f"the reference row {system!r} has no metrics files for {dataset!r}")
    values = [files.mean(p, metric) for p in paths]
    mean = fmean(values)
    return {"method": system, "value": mean, "printed": printed(mean), "stars": "", "p_value": None,
            "rounding": ROUNDING, "per_seed": None, "ttest": None, "candidates": None,
            "runs": [{"metrics_file": p, "value": v, "per_query": files.per_query(p, metric)}
                     for p, v in zip(paths, values)]}


def _where(kind: str, group: str, ranker: str, row: str, label: str, count: int | None, shown: str, dataset: str,
           dataset_label: str, metric: str) -> dict:
    """Where a cell sits: its row and column, and its id (``cell_id``)."""
    return {"cell": cell_id(ranker, row, dataset, metric), "row_kind": kind, "group": group, "ranker": ranker,
            "row": row, "label": label,
            "trainable_parameters": count, "printed_parameters": shown, "dataset": dataset,
            "dataset_label": dataset_label, "metric": metric}


def _baseline_row(group: dict, rows: list[list[dict]], baseline: str) -> list[dict]:
    found = [cells for row, cells in zip(group["rows"], rows) if row["method"] == baseline]
    if len(found) != 1:
        raise ValueError(f"group {group['label']!r} needs exactly one {baseline!r} row, found {len(found)}")
    return found[0]


def row_cells(records: list[RunRecord], ranker: str, methods: list[str], columns: list[tuple[str, str]]
              ) -> list[list[dict]]:
    """Each method's cells (mean, per-seed means, runs) for ``columns`` of (dataset, metric), untested:
    what a figure plots."""
    index, files = index_runs(records), MetricFiles()
    return [[run_cell(row_runs(index, d, ranker, method), m, files) | {"dataset": d, "metric": m}
             for d, m in columns] for method in methods]

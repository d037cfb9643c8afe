"""Ranking metrics with pytrec_eval, so every number has real trec_eval semantics.

Metric names follow the paper's tables ("P@20", "nDCG@5", "MAP", "MRR@10",
"R@100"); they are translated once here into trec_eval measures.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

import pytrec_eval

from . import folds
from .trec import Qrels, Run, atomic_write, read_qrels, read_run, truncate_run

PerQuery = dict[str, dict[str, float]]

_CUTOFF_MEASURES = {"P": "P_{k}", "nDCG": "ndcg_cut_{k}", "R": "recall_{k}", "MRR": "recip_rank"}
_NAME = re.compile(r"^(P|nDCG|MRR|R)@([1-9][0-9]*)$")
ALLOWED_FORMS = "P@k, nDCG@k, MAP, MRR@k, R@k (k a positive integer)"


@dataclass(frozen=True)
class Metric:
    """A table metric as trec_eval computes it.

    ``depth`` is set when the run must be cut before evaluation: trec_eval's
    recip_rank has no cutoff, so MRR@k is recip_rank on each query's top k.
    """

    name: str
    measure: str
    depth: int | None = None


def parse_metric(name: str) -> Metric:
    """Translate a table metric name into its trec_eval measure."""
    if name == "MAP":
        return Metric(name, "map")
    match = _NAME.match(name)
    if match is None:
        raise ValueError(f"unknown metric {name!r}; allowed forms: {ALLOWED_FORMS}")
    family, k = match.group(1), int(match.group(2))
    measure = _CUTOFF_MEASURES[family].format(k=k)
    return Metric(name, measure, depth=k if family == "MRR" else None)


def evaluated_qids(qrels: Qrels, qids: list[str] | None = None) -> list[str]:
    """Queries that count: like trec_eval, those with no relevant document are skipped."""
    candidates = qrels if qids is None else qids
    return sorted(q for q in candidates if any(rel > 0 for rel in qrels.get(q, {}).values()))


def _measure(run: Run, qrels: Qrels, measures: set[str]) -> PerQuery:
    """pytrec_eval on the queries the run answers (pytrec_eval skips the others)."""
    answered = {qid: docs for qid, docs in run.items() if qid in qrels and docs}
    if not answered:
        return {}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(answered)


def evaluate_run(run: Run, qrels: Qrels, metrics: list[str],
                 qids: list[str] | None = None) -> PerQuery:
    """Per-query metric values; an evaluated query missing from the run scores 0 (trec_eval -c)."""
    parsed = [parse_metric(name) for name in metrics]
    keep = evaluated_qids(qrels, qids)
    judged = {qid: qrels[qid] for qid in keep}
    per_query: PerQuery = {qid: {m.name: 0.0 for m in parsed} for qid in keep}
    for depth in {m.depth for m in parsed}:
        group = [m for m in parsed if m.depth == depth]
        cut = run if depth is None else truncate_run(run, depth)
        scores = _measure(cut, judged, {m.measure for m in group})
        for qid, values in scores.items():
            for metric in group:
                per_query[qid][metric.name] = float(values[metric.measure])
    return per_query


def metric_summary(per_query: PerQuery, metrics: list[str]) -> dict:
    """Means over the evaluated queries, kept with the per-query values they came from."""
    if not per_query:
        raise ValueError("no evaluated query (none has a judged-relevant document)")
    return {
        "metrics": list(metrics),
        "queries": len(per_query),
        "mean": {m: fmean(values[m] for values in per_query.values()) for m in metrics},
        "per_query": per_query,
    }


def evaluate_fold(run_path: str | os.PathLike, qrels_path: str | os.PathLike, folds_path: str | os.PathLike,
                  fold: str, metrics: list[str], depth: int | None = None) -> dict:
    """Summary (``metric_summary``) of a run file on the test queries of ``fold``; ``depth`` cuts the run first
    (BM25 as a reference row, at the depth the rerankers see). What the evaluate rule writes and the audit redoes."""
    run = read_run(run_path)
    if depth is not None:
        run = truncate_run(run, depth)
    test = folds.rotation(json.loads(Path(folds_path).read_text()), fold)["test"]
    return metric_summary(evaluate_run(run, read_qrels(qrels_path), metrics, test), metrics)


def write_metrics(path: str | os.PathLike, summary: dict, extra: dict) -> None:
    """Write one evaluation as JSON, ``extra`` (provenance: dataset, method, fold...) first."""
    document = {**extra, "metrics": summary["metrics"], "queries": summary["queries"],
                "mean": summary["mean"], "per_query": summary["per_query"]}
    with atomic_write(path) as handle:
        json.dump(document, handle, indent=2, allow_nan=False)
        handle.write("\n")


def read_metrics(path: str | os.PathLike) -> dict:
    with open(path) as handle:
        return json.load(handle)

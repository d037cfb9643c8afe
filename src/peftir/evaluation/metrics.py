"""Ranking metrics with ir_measures, so every number has trec_eval's (or MS MARCO's) semantics.

Metric names are ir_measures' own (``P@20``, ``nDCG@20``, ``RR@10``, ``AP``, ``R@1000``), checked
and mapped to the provider that computes them in ``peftir.layout``. Which queries count is the
same for every measure: the test queries with at least one relevant judgment (as trec_eval skips
the others); such a query missing from the run scores 0 (trec_eval -c).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from statistics import fmean

from ..data import folds
from ..data.trec import Qrels, Run, answered, read_qrels, read_run, report_missing
from ..files import atomic_write
from ..layout import measure, measure_provider

PerQuery = dict[str, dict[str, float]]


def evaluated_qids(qrels: Qrels, qids: list[str] | None = None) -> list[str]:
    """Queries that count: like trec_eval, those with no relevant document are skipped."""
    candidates = qrels if qids is None else qids
    return sorted(q for q in candidates if any(rel > 0 for rel in qrels.get(q, {}).values()))


def evaluate_run(run: Run, qrels: Qrels, metrics: list[str], qids: list[str] | None = None) -> PerQuery:
    """Per-query metric values (by metric name) on the evaluated queries among ``qids``."""
    keep = evaluated_qids(qrels, qids)
    judged = {qid: qrels[qid] for qid in keep}
    answered = {qid: docs for qid, docs in run.items() if qid in judged and docs}
    per_query: PerQuery = {qid: {name: 0.0 for name in metrics} for qid in keep}
    by_provider: dict = {}
    for name in metrics:
        parsed = measure(name)
        by_provider.setdefault(measure_provider(parsed), []).append(parsed)
    for provider, measures in by_provider.items():
        for result in provider.iter_calc(measures, judged, answered):
            per_query[result.query_id][str(result.measure)] = float(result.value)
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
    """Summary (``metric_summary``) of a run file on the test queries of ``fold``, with the evaluated queries the
    run has no document for (they score 0, and are reported); ``depth`` cuts the run first
    (BM25 as a reference row, at the depth the rerankers see). What the evaluate rule writes and the audit redoes."""
    return evaluate_queries(run_path, qrels_path, folds.rotation(folds.read_folds(folds_path), fold)["test"], metrics,
                            depth)


def evaluate_queries(run_path: str | os.PathLike, qrels_path: str | os.PathLike, test: list[str], metrics: list[str],
                     depth: int | None = None, drop_self_hits: bool = False) -> dict:
    """``evaluate_fold`` on the given test queries; with ``drop_self_hits``, a retrieved document whose id is the
    query's own is left out first (BEIR's evaluation: in ArguAna and Quora a query is also a document)."""
    run = read_run(run_path, test, depth)
    if drop_self_hits:
        run = {qid: {doc: score for doc, score in docs.items() if doc != qid} for qid, docs in run.items()}
    qrels = read_qrels(qrels_path)
    summary = metric_summary(evaluate_run(run, qrels, metrics, test), metrics)
    return {**summary, "missing_from_run": report_missing(answered(run), evaluated_qids(qrels, test), str(run_path))}


def measure_fold(run_path: str, qrels_path: str, folds_path: str, fold: str, metrics: list[str],
                 depth: int | None, output: str, about: dict) -> None:
    """The ``evaluate`` rules: a run's per-query and mean metrics on a fold's test queries, as JSON."""
    summary = evaluate_fold(run_path, qrels_path, folds_path, fold, metrics, depth)
    write_metrics(output, summary, extra={"run": run_path, "qrels": qrels_path, **about})


def write_metrics(path: str | os.PathLike, summary: dict, extra: dict) -> None:
    """Write one evaluation as JSON, ``extra`` (provenance: dataset, method, fold...) first."""
    document = {**extra, **summary}
    with atomic_write(path) as handle:
        json.dump(document, handle, indent=2, allow_nan=False)
        handle.write("\n")


def read_metrics(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text())

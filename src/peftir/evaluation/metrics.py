"""Ranking metrics with ir_measures, so every number has trec_eval's (or MS MARCO's) semantics.

Metric names are ir_measures' own (``P@20``, ``nDCG@20``, ``RR@10``, ``AP``, ``R@1000``), checked
and mapped to the provider that computes them in ``peftir.contract.measures``. Which queries count is the
same for every measure: the test queries with at least one relevant judgment (as trec_eval skips
the others); such a query missing from the run scores 0 (trec_eval -c).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from statistics import fmean
from typing import Mapping

from ..data import folds
from ..data.trec import Qrels, Run, answered_queries, ranked, read_qrels, read_run, report_missing
from ..files import atomic_write
from ..contract.measures import R_FLOPS, measure, measure_provider

PerQuery = dict[str, dict[str, float]]


def evaluated_qids(qrels: Qrels, qids: list[str] | None = None, every_query: bool = False) -> list[str]:
    """Queries that count: like trec_eval, those with no relevant document are skipped; with ``every_query``, all
    of ``qids`` (answer-judged runs, whose judgments are only what the run retrieved)."""
    if every_query and qids is not None:
        return sorted(qids)
    candidates = qrels if qids is None else qids
    return sorted(q for q in candidates if any(rel > 0 for rel in qrels.get(q, {}).values()))


def evaluate_run(run: Run, qrels: Qrels, metrics: list[str], qids: list[str] | None = None,
                 every_query: bool = False) -> PerQuery:
    """Per-query metric values (by metric name) on the evaluated queries among ``qids``; with ``every_query``,
    on all of ``qids`` (a question whose judgments hold no relevant passage scores 0: answer-judged runs, whose
    judgments are only what the run retrieved, ``peftir.evaluation.answers``)."""
    keep = evaluated_qids(qrels, qids, every_query)
    judged = {qid: qrels.get(qid, {}) for qid in keep}
    answered = in_trec_order({qid: docs for qid, docs in run.items() if qid in judged and docs})
    per_query: PerQuery = {qid: {name: 0.0 for name in metrics} for qid in keep}
    by_provider: dict = {}
    for name in metrics:
        parsed = measure(name)
        by_provider.setdefault(measure_provider(parsed), []).append(parsed)
    for provider, measures in by_provider.items():
        for result in provider.iter_calc(measures, judged, answered):
            per_query[result.query_id][str(result.measure)] = float(result.value)
    return per_query


def in_trec_order(run: Run) -> Run:
    """Each query's documents scored by their place in trec_eval's order (``trec.ranked``: ties by docid
    descending), so every provider ranks a tie as trec_eval does: ir_measures' ``msmarco`` provider (RR@k, which
    pytrec_eval has no cutoff for) would break it by ascending docid, and RR@10 and RR of one run disagree."""
    return {qid: {doc: float(len(docs) - place) for place, (doc, _) in enumerate(ranked(docs))}
            for qid, docs in run.items()}


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
                  fold: str, metrics: list[str], depth: int | None = None, every_query: bool = False) -> dict:
    """Summary (``metric_summary``) of a run file on the test queries of ``fold``, with the evaluated queries the
    run has no document for (they score 0, and are reported); ``depth`` cuts the run first
    (BM25 as a reference row, at the depth the rerankers see). What the evaluate rule writes and the audit redoes."""
    return evaluate_queries(run_path, qrels_path, folds.rotation(folds.read_folds(folds_path), fold)["test"], metrics,
                            depth, every_query=every_query)


def evaluate_queries(run_path: str | os.PathLike, qrels_path: str | os.PathLike, test: list[str], metrics: list[str],
                     depth: int | None = None, drop_self_hits: bool = False, every_query: bool = False) -> dict:
    """``evaluate_fold`` on the given test queries; with ``drop_self_hits``, a retrieved document whose id is the
    query's own is left out first (BEIR's evaluation: in ArguAna and Quora a query is also a document); with
    ``every_query``, each test query counts (``evaluate_run``)."""
    run = read_run(run_path, test, depth)
    if drop_self_hits:
        run = {qid: {doc: score for doc, score in docs.items() if doc != qid} for qid, docs in run.items()}
    qrels = read_qrels(qrels_path)
    summary = metric_summary(evaluate_run(run, qrels, metrics, test, every_query), metrics)
    missing = report_missing(answered_queries(run), evaluated_qids(qrels, test, every_query), str(run_path))
    return {**summary, "missing_from_run": missing}


def evaluated_queries(folds_path: str | os.PathLike, fold: str, scope: str) -> list[str]:
    """The test queries of ``fold`` (``scope: fold``) or every test query of the collection (``all``)."""
    doc = folds.read_folds(folds_path)
    return folds.rotation(doc, fold)["test"] if scope == "fold" else folds.test_queries(doc)


def evaluate_scoped(run_path: str, qrels_path: str, folds_path: str, fold: str, flops: str | None,
                    spec: Mapping) -> dict:
    """A scoped evaluation (SPLADE's runs, a dense run of another query set): the run's summary on the
    ``spec['scope']`` test queries (``evaluated_queries``: a retriever on the collection it trained on is evaluated on
    its fold's test queries, on another — TREC DL beside MS MARCO, a BEIR collection zero-shot — on every test
    query), its ``spec['metrics']`` and, given the search's ``flops``, R-FLOPS: the per-query FLOPS the search
    measured (``peftir.splade.impact.query_flops``) over the same evaluated queries, so its mean over a fold's test
    queries is the paper's R-FLOPS over that query set and a table column like MRR@10 (BM25's run has none). With
    ``spec['drop_self_hits']``, as BEIR and the released ``beir_eval.py`` evaluate: ArguAna's and Quora's queries
    are documents of their corpora and would otherwise find themselves at rank 1."""
    summary = evaluate_queries(run_path, qrels_path, evaluated_queries(folds_path, fold, spec["scope"]),
                               list(spec["metrics"]), drop_self_hits=spec.get("drop_self_hits", False))
    if flops is None:
        return summary
    measured = json.loads(Path(flops).read_text())["per_query"]
    missing = sorted(set(summary["per_query"]) - set(measured))
    if missing:
        raise ValueError(f"{flops}: no FLOPS for the evaluated queries {missing[:5]}: not the search of {run_path}")
    for qid, values in summary["per_query"].items():
        values[R_FLOPS] = measured[qid]
    summary["metrics"].append(R_FLOPS)
    summary["mean"][R_FLOPS] = fmean(values[R_FLOPS] for values in summary["per_query"].values())
    return summary


# An evaluate job's one ``evaluation`` param holds the params (``peftir.pipeline.contract.PARAMS``) its variant is
# given, by name: metric names, at the rerankers' ``depth`` (``metrics``: the evaluate rule's) or at the run's own
# depth (``dense_metrics``, ``clir_metric``), or a scoped evaluation (``splade_evaluation``, ``dense_evaluation``:
# metrics, which test queries, drop_self_hits).
METRIC_PARAMS = ("metrics", "dense_metrics", "clir_metric")
SCOPED_EVALUATIONS = ("splade_evaluation", "dense_evaluation")


def evaluation_summary(run_path: str, qrels_path: str, folds_path: str, fold: str, evaluation: Mapping,
                       flops: str | None = None) -> dict:
    """What an evaluate job writes (``measure_run``) and the audit recomputes: ``evaluate_scoped`` for a scoped
    evaluation, else ``evaluate_fold`` on the fold's test queries; with ``evaluation['answers']`` (the dataset's
    ``answers``), ``qrels_path`` is the run's answer judgments and every test question counts."""
    scoped = [evaluation[name] for name in SCOPED_EVALUATIONS if name in evaluation]
    if scoped:
        return evaluate_scoped(run_path, qrels_path, folds_path, fold, flops, scoped[0])
    metrics = next((evaluation[name] for name in METRIC_PARAMS if name in evaluation), None)
    if metrics is None:
        raise ValueError(f"an evaluation names its metrics in one of {METRIC_PARAMS + SCOPED_EVALUATIONS}, "
                         f"not in {sorted(evaluation)}")
    return evaluate_fold(run_path, qrels_path, folds_path, fold, metrics, evaluation.get("depth"),
                         every_query=bool(evaluation.get("answers")))


def measure_run(run_path: str, qrels_path: str, folds_path: str, fold: str, evaluation: Mapping, output: str,
                about: dict, flops: str | None = None) -> None:
    """Every evaluate rule (``evaluate`` and its variants): a run's per-query and mean metrics on its test queries
    (``evaluation_summary``), as JSON; a scoped evaluation's file also names the search's FLOPS file (None: none)."""
    scoped = any(name in evaluation for name in SCOPED_EVALUATIONS)
    extra = {"run": run_path, "qrels": qrels_path, **({"flops": flops} if scoped else {}), **about}
    write_metrics(output, evaluation_summary(run_path, qrels_path, folds_path, fold, evaluation, flops), extra=extra)


def write_metrics(path: str | os.PathLike, summary: dict, extra: dict) -> None:
    """Write one evaluation as JSON, ``extra`` (provenance: dataset, method, fold...) first."""
    document = {**extra, **summary}
    with atomic_write(path) as handle:
        json.dump(document, handle, indent=2, allow_nan=False)
        handle.write("\n")


def read_metrics(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text())

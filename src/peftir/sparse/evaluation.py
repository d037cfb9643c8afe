"""A SPLADE run's metrics with its queries' FLOPS beside them, so R-FLOPS is a table column like MRR@10.

On the collection it trained on a retriever is evaluated on its fold's test queries; on another (``scope:
all``: TREC DL beside MS MARCO's dev queries, a BEIR collection zero-shot) on every test query of that
collection. R-FLOPS joins the ir_measures metrics as the per-query FLOPS the search measured
(``peftir.sparse.impact.query_flops``) over the same evaluated queries: its mean over a fold's test queries is
the paper's R-FLOPS over that query set (the released code's is over MS MARCO's 101k dev queries). On a BEIR
collection a retrieved document whose id is the query's is dropped before the metrics, as BEIR's evaluation and
the released ``beir_eval.py`` do (``drop_self_hits``): ArguAna's and Quora's queries are documents of their
corpora, and would otherwise find themselves at rank 1.
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean

from ..data import folds
from ..evaluation.metrics import evaluate_queries, write_metrics
from ..layout import R_FLOPS


def evaluated_queries(folds_path: str, fold: str, scope: str) -> list[str]:
    """The test queries of ``fold`` (``scope: fold``) or every test query of the collection (``all``)."""
    doc = folds.read_folds(folds_path)
    return folds.rotation(doc, fold)["test"] if scope == "fold" else folds.test_queries(doc)


def evaluate_splade_run(run: str, qrels: str, folds_path: str, fold: str, flops: str | None, spec: dict) -> dict:
    """The run's summary (``peftir.evaluation.metrics.metric_summary``) on the ``spec['scope']`` test queries, its
    ``spec['metrics']`` and, given the search's ``flops``, R-FLOPS (BM25's run has none); what the
    ``evaluate_splade`` rules write and the audit recomputes."""
    summary = evaluate_queries(run, qrels, evaluated_queries(folds_path, fold, spec["scope"]), list(spec["metrics"]),
                               drop_self_hits=spec.get("drop_self_hits", False))
    if flops is None:
        return summary
    measured = json.loads(Path(flops).read_text())["per_query"]
    missing = sorted(set(summary["per_query"]) - set(measured))
    if missing:
        raise ValueError(f"{flops}: no FLOPS for the evaluated queries {missing[:5]}: not the search of {run}")
    for qid, values in summary["per_query"].items():
        values[R_FLOPS] = measured[qid]
    summary["metrics"].append(R_FLOPS)
    summary["mean"][R_FLOPS] = fmean(values[R_FLOPS] for values in summary["per_query"].values())
    return summary


def measure_splade(run: str, qrels: str, folds_path: str, fold: str, flops: str | None, spec: dict, output: str,
                   about: dict) -> None:
    """The ``evaluate_splade`` and ``evaluate_splade_bm25`` rules."""
    write_metrics(output, evaluate_splade_run(run, qrels, folds_path, fold, flops, spec),
                  extra={"run": run, "qrels": qrels, "flops": flops, **about})

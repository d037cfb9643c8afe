"""A reranker of Adapters-SPLADE's Table 7 trained on a dataset's training queries, and the first stage's top
documents reranked with it.

Each training query with one relevant document and one BM25 negative, cross-entropy over the pair (§4.4: a
contrastive loss with one BM25 negative and no in-batch negatives); AdamW, warm-up and decay, validation by the
dataset's validation metric on the validation queries' BM25 candidates, best state kept
(``peftir.training.validated``), only what trains saved (the head, and the adapters or the whole encoder).
Reranking reads the first stage's run (a SPLADE retriever's, ``sparse_retrieval.rerankers.first_stage``) on the
same queries the evaluation takes.
"""
from __future__ import annotations

import time
from typing import Iterator

import torch
import torch.nn.functional as F

from ..data import folds, trec
from .. import progress_log
from ..data.run_index import RunIndex
from ..evaluation.metrics import evaluated_queries
from ..execution.passes import Configured, Encoder, Shape
from ..execution.seam import Execution
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from .cross_encoder import CrossEncoder, build_cross_encoder
from ..models.inputs import Collection
from ..training.passage_groups import NegativePools, PassageGroups
from .train import validation_queries
from ..training.validated import load_kept, save_trained, train_validated


def rank_pairs(model: CrossEncoder, topics: dict[str, str], candidates: dict[str, list[str]], texts,
               batch_size: Configured) -> trec.Run:
    """Each query's candidates scored by the cross-encoder, as many pairs per forward as the execution decides for
    ``batch_size`` (``auto`` or a number; recorded as ``rerank``); ``texts`` maps document ids to texts (a dict, or a
    function of a list of ids)."""
    run: trec.Run = {}
    batch_size = model.execution.rows_per_pass("rerank", batch_size, max(map(len, candidates.values()), default=1),
                                               Encoder.of(model.encoder.config, model), Shape(model.max_len, False))
    with torch.no_grad():
        for qid, docs in candidates.items():
            found = texts(docs) if callable(texts) else texts
            scores = [model.score([topics[qid]] * len(docs[start:start + batch_size]),
                                  [found[d] for d in docs[start:start + batch_size]])
                      for start in range(0, len(docs), batch_size)]
            run[qid] = dict(zip(docs, torch.cat(scores).tolist())) if scores else {}
    return run


def parameter_shares(model: CrossEncoder) -> dict[str, int | float]:
    """What trains (the head, and the adapters or the whole encoder) against the whole reranker."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return {"trainable": trainable, "total": total, "percent_trainable": round(100 * trainable / total, 3)}


def train_cross_encoder(spec: dict, collection: Collection, bm25_run: str, fold: str, seed: int, threads: int,
                        output: str, summary: str) -> dict:
    """The ``train_splade_reranker`` rule: the reranker ``spec`` (the ``splade_reranker`` param: backbone, method,
    training settings, execution) on the fold's training queries."""
    torch.manual_seed(seed)
    started, settings, method = time.monotonic(), spec["train"], spec["method"]
    model = build_cross_encoder(spec["backbone"], method, settings["max_len"], Execution.of(spec["execution"], threads))
    split = folds.rotation(folds.read_folds(collection.folds), fold)["train"]
    valid = validation_queries(collection.folds, fold, settings["validation_queries"], seed)
    qrels = trec.read_qrels(collection.qrels)
    groups = PassageGroups({q: trec.relevant(qrels, q) for q in split},
                           NegativePools([bm25_run], qrels, split, settings["negative_depth"]), 2, seed)
    batches = groups.batches(settings["batch_size"])
    topics = trec.read_topics(collection.queries)
    validation = {q: list(docs) for q, docs in trec.read_run(bm25_run, set(valid), settings["validation_depth"]).items()}
    with collection.store() as store:
        valid_texts = store.texts(sorted({d for docs in validation.values() for d in docs}))

        def update(step: int) -> torch.Tensor:
            batch = next(batches)
            texts = store.texts([doc for _, passages in batch for doc in passages])
            queries = [topics[qid] for qid, _ in batch]
            scores = torch.stack([model.score(queries, [texts[passages[i]] for _, passages in batch]) for i in (0, 1)],
                                 dim=1)
            loss = F.cross_entropy(scores, torch.zeros(len(batch), dtype=torch.long, device=scores.device))
            loss.backward()
            return loss.detach().double()

        trained = train_validated(model, update, lambda: rank_pairs(model, topics, validation, valid_texts,
                                                                    settings["batch_size"]),
                                  qrels, valid, method["lr"], settings)
    about = {"method": method, "backbone": spec["backbone"], "seed": seed, "training_queries": len(groups.qids),
             "validation_queries": len(valid)}
    return save_trained(model, trained, output, summary, about, parameter_shares(model), started)


def trained_reranker(spec: dict, threads: int, trained: str) -> CrossEncoder:
    """The reranker ``spec`` (the ``splade_reranker`` param) with its kept weights ``trained``, ready to score."""
    model = build_cross_encoder(spec["backbone"], spec["method"], spec["train"]["max_len"],
                                Execution.of(spec["execution"], threads))
    load_kept(model, trained)
    return model.eval()


def reranked_queries(model: CrossEncoder, collection: Collection, first_stage: str, qids: list[str], settings: dict,
                     counts: dict[str, int] | None = None) -> Iterator[tuple[str, dict[str, float]]]:
    """Each of ``qids`` (in order) with its first stage's top ``settings['depth']`` scored by ``model``; one
    query's candidates read and scored at a time. ``counts``: the queries and pairs scored, counted as they go."""
    counts = {"queries": 0, "pairs": 0} if counts is None else counts
    candidates = RunIndex(first_stage, set(qids))
    topics = trec.read_topics(collection.queries, set(qids))
    progress_log.start("reranking the queries", len(qids), "queries")
    with collection.store() as store:
        for qid in sorted(qids):
            docs = [doc for doc, _ in candidates.top(qid, settings["depth"])]
            if docs:
                counts["queries"] += 1
                counts["pairs"] += len(docs)
                yield from rank_pairs(model, topics, {qid: docs}, store.texts, settings["batch_size"]).items()
            progress_log.advance("reranking the queries")
    progress_log.finish("reranking the queries")


def rerank_first_stage(spec: dict, settings: dict, collection: Collection, first_stage: str, fold: str, threads: int,
                       trained: str, about: dict, run: str, metadata: str) -> dict:
    """The ``splade_rerank`` rule: the first stage's top ``settings['depth']`` of the evaluated queries
    (``settings['scope']``, as ``peftir.evaluation.metrics.evaluated_queries``) reranked by the trained reranker
    ``trained``, as a TREC run with ir_metadata; one query's candidates read, scored and written at a time (6,980
    queries × 1,000)."""
    model = trained_reranker(spec, threads, trained)
    qids = evaluated_queries(collection.folds, fold, settings["scope"])
    started, counts = time.monotonic(), {"queries": 0, "pairs": 0}
    tag = "-".join(str(about[key]) for key in ("reranker", "fold", "seed"))
    trec.write_run(run, reranked_queries(model, collection, first_stage, qids, settings, counts), tag)
    facts = {**counts, "depth": settings["depth"], "seconds": round(time.monotonic() - started, 1)}
    write_ir_metadata(metadata, ir_metadata(tag, {"reranking": "cross-encoder over the first stage's top documents",
                                                  "first_stage": first_stage, **facts,
                                                  "execution": model.execution.used(), **about},
                                            {"name": about["target"]}))
    return facts

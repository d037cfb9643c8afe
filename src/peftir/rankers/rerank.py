"""Reranking candidate lists with a trained ranker.

Cross-encoders score every (query, document) pair; bi-encoders encode each
candidate document once and each query once, then score from the encodings.
Batches are formed from length-sorted inputs to waste little on padding.
"""
from __future__ import annotations

import sys
from typing import Callable

import torch
from tqdm import tqdm

from ..data import folds
from ..data.trec import Run, report_missing, write_run
from ..methods.learned import load_learned_state
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from .configured import configured_ranker, ranking_data, saved_weights, seed_everything
from .inputs import Collection, RankingData
from .models import DOCUMENT, QUERY, BiEncoder, Ranker


def progress(total: int, desc: str) -> tqdm:
    """A progress bar for the job's log file (stderr), updated at most every few seconds."""
    return tqdm(total=total, desc=desc, file=sys.stderr, mininterval=5, ascii=True, dynamic_ncols=False)


def batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


@torch.inference_mode()
def rerank(ranker: Ranker, data: RankingData, qids: list[str], batch_size: int, desc: str = "rerank") -> Run:
    """Scores for the candidates of ``qids`` (queries without candidates are left out)."""
    ranker.eval()
    qids = [qid for qid in qids if data.candidates.get(qid)]
    if isinstance(ranker, BiEncoder):
        return _rerank_bi(ranker, data, qids, batch_size, desc)
    pairs = sorted(((qid, docid) for qid in qids for docid in data.candidates[qid]),
                   key=lambda pair: (len(data.docs[pair[1]]), pair))
    run: Run = {qid: {} for qid in qids}
    with progress(len(pairs), f"{desc} pairs") as bar:
        for batch in batches(pairs, batch_size):
            scores = ranker.score_pairs([data.queries[q] for q, _ in batch],
                                        [data.docs[d] for _, d in batch])
            for (qid, docid), score in zip(batch, scores.tolist()):
                run[qid][docid] = score
            bar.update(len(batch))
    return run


def _rerank_bi(ranker: BiEncoder, data: RankingData, qids: list[str], batch_size: int, desc: str) -> Run:
    # ties broken by docid: batch composition (hence padding, hence the last float bits) must not
    # depend on set order, which changes with each process's hash seed
    docids = sorted({d for qid in qids for d in data.candidates[qid]}, key=lambda d: (len(data.docs[d]), d))
    encoded = {}
    with progress(len(docids), f"{desc} documents") as bar:
        for batch in batches(docids, batch_size):
            encoded.update(zip(batch, ranker.encode([data.docs[d] for d in batch], DOCUMENT)))
            bar.update(len(batch))
    run: Run = {}
    for batch in batches(qids, batch_size):
        for qid, rep in zip(batch, ranker.encode([data.queries[q] for q in batch], QUERY)):
            docs = list(data.candidates[qid])
            run[qid] = dict(zip(docs, ranker.score_encoded(rep, [encoded[d] for d in docs]).tolist()))
    return run


def score_test_fold(collection: Collection, candidates: str, fold: str, seed: int, ranker: str, backbone: dict,
                    settings: dict, method: dict, training: dict, reranking: dict, device: str, threads: int,
                    weights: str, sample: Callable[[list[str]], list[str]] | None = None) -> Run:
    """Scores of the kept weights ``weights`` for the test fold's BM25 candidates: all its queries, or those
    ``sample`` picks from them (``peftir audit --rescore`` checks a run file this way)."""
    seed_everything(seed)
    model, _, tokenizer = configured_ranker(ranker, backbone, settings, method, training["lr"], device, threads)
    load_learned_state(model, saved_weights(weights, model)["state"])
    test = folds.rotation(folds.read_folds(collection.folds), fold)["test"]
    qids = sample(test) if sample else test
    return rerank(model, ranking_data(collection, candidates, qids, reranking["depth"], tokenizer, settings), qids,
                  reranking["batch_size"], desc="test")


def rerank_test_fold(collection: Collection, candidates: str, dataset: str, fold: str, seed: int, ranker: str,
                     backbone: dict, settings: dict, method: dict, training: dict, reranking: dict, device: str,
                     threads: int, weights: str, output: str, metadata: str) -> None:
    """The ``rerank`` rule: a trained run's kept weights rerank the test fold's BM25 candidates, written
    as a TREC run, with its ir_metadata beside it naming the ranker, method and settings."""
    run = score_test_fold(collection, candidates, fold, seed, ranker, backbone, settings, method, training,
                          reranking, device, threads, weights)
    tag = f"{ranker}-{method['name']}-{fold}-{seed}"
    about = {"retrieval": f"BM25 top-{reranking['depth']}, reranked", "ranker": ranker, "fine-tuning": method,
             "backbone": backbone, "training": training, "seed": seed}
    report_missing(run, folds.rotation(folds.read_folds(collection.folds), fold)["test"], output)
    write_run(output, run, tag=tag)
    write_ir_metadata(metadata, ir_metadata(tag, about, {"name": dataset, "fold": fold,
                                                         "queries": "the fold's test queries"}))

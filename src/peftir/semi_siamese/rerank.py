"""Reranking candidate lists with a trained ranker.

Cross-encoders score every (query, document) pair; bi-encoders encode each
candidate document once and each query once, then score from the encodings.
Batches are formed from length-sorted inputs to waste little on padding; how many
pairs or texts a batch holds is the execution's decision (``rerank.batch_size``:
``auto`` or a number), recorded as the job's ``rerank`` pass.
"""
from __future__ import annotations

import sys
from typing import Callable, Iterator

import torch
from tqdm import tqdm

from ..data import folds
from ..data.trec import Run, answered_queries, report_missing, write_run
from ..models.learned import load_learned_state
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from ..execution.passes import Configured, Encoder, Shape
from ..execution.seam import Execution
from .. import progress_log
from .configured import configured_ranker, ranking_data, saved_weights, seed_everything
from ..models.inputs import Collection, RankingData
from .rankers import DOCUMENT, PAIR, QUERY, BiEncoder, Ranker


def progress(total: int, desc: str) -> tqdm:
    """A progress bar for the job's log file (stderr), updated at most every few seconds."""
    return tqdm(total=total, desc=desc, file=sys.stderr, mininterval=5, ascii=True, dynamic_ncols=False)


def batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


GROUP_PAIRS = 4096   # candidates scored per group of queries: bounds a job's memory at any depth or query count


def query_groups(qids: list[str], candidates: Run, limit: int) -> Iterator[list[str]]:
    """Consecutive queries whose candidates add up to at most ``limit`` (a query with more is a group alone)."""
    group: list[str] = []
    size = 0
    for qid in qids:
        if group and size + len(candidates[qid]) > limit:
            yield group
            group, size = [], 0
        group.append(qid)
        size += len(candidates[qid])
    if group:
        yield group


def rerank_rows(ranker: Ranker, batch_size: Configured) -> int:
    """Pairs (cross-encoder) or documents (bi-encoder) per encoding pass: the execution's decision for
    ``batch_size``, recorded as ``rerank``."""
    role = DOCUMENT if isinstance(ranker, BiEncoder) else PAIR
    return ranker.execution.rows_per_pass("rerank", batch_size, GROUP_PAIRS, Encoder.of(ranker.bert.config, ranker),
                                          Shape(ranker.tokens_per_text(role), False, sequence=ranker.max_seq_len))


@torch.inference_mode()
def rerank(ranker: Ranker, data: RankingData, qids: list[str], batch_size: Configured, desc: str = "rerank") -> Run:
    """Scores for the candidates of ``qids`` (queries without candidates are left out), a group of queries at
    a time: their documents are fetched, tokenised and scored (bi-encoders: encoded once) and let go."""
    ranker.eval()
    qids = [qid for qid in qids if data.candidates.get(qid)]
    batch_size = rerank_rows(ranker, batch_size)
    score = _rerank_bi if isinstance(ranker, BiEncoder) else _rerank_pairs
    run: Run = {}
    progress_log.start(f"{desc} candidates", sum(len(data.candidates[qid]) for qid in qids), "candidates")
    with progress(sum(len(data.candidates[qid]) for qid in qids), f"{desc} candidates") as bar:
        for group in query_groups(qids, data.candidates, GROUP_PAIRS):
            run.update(score(ranker, data, group, batch_size))
            bar.update(sum(len(data.candidates[qid]) for qid in group))
            progress_log.advance(f"{desc} candidates", sum(len(data.candidates[qid]) for qid in group))
    progress_log.finish(f"{desc} candidates")
    return run


def _tokens(lookup, keys) -> dict[str, list[int]]:
    keys = sorted(set(keys))
    return dict(zip(keys, lookup.many(keys)))


def _rerank_pairs(ranker: Ranker, data: RankingData, qids: list[str], batch_size: int) -> Run:
    queries = _tokens(data.queries, qids)
    docs = _tokens(data.docs, (docid for qid in qids for docid in data.candidates[qid]))
    pairs = sorted(((qid, docid) for qid in qids for docid in data.candidates[qid]),
                   key=lambda pair: (len(docs[pair[1]]), pair))
    run: Run = {qid: {} for qid in qids}
    scores = [ranker.score_pairs([queries[q] for q, _ in batch], [docs[d] for _, d in batch])
              for batch in batches(pairs, batch_size)]
    for (qid, docid), value in zip(pairs, torch.cat(scores).tolist()):     # read back once per group
        run[qid][docid] = value
    return run


def _rerank_bi(ranker: BiEncoder, data: RankingData, qids: list[str], batch_size: int) -> Run:
    docs = _tokens(data.docs, (docid for qid in qids for docid in data.candidates[qid]))
    # ties broken by docid: batch composition (hence padding, hence the last float bits) must not
    # depend on set order, which changes with each process's hash seed
    docids = sorted(docs, key=lambda d: (len(docs[d]), d))
    encoded = {}
    for batch in batches(docids, batch_size):
        encoded.update(zip(batch, ranker.encode([docs[d] for d in batch], DOCUMENT)))
    queries = _tokens(data.queries, qids)
    scores = []
    for batch in batches(qids, batch_size):
        for qid, rep in zip(batch, ranker.encode([queries[q] for q in batch], QUERY)):
            scores.append(ranker.score_encoded(rep, [encoded[d] for d in data.candidates[qid]]))
    values = iter(torch.cat(scores).tolist())                  # read back once per group
    return {qid: {docid: next(values) for docid in data.candidates[qid]} for qid in qids}


def score_test_fold(collection: Collection, candidates: str, fold: str, seed: int, ranker: str, backbone: dict,
                    settings: dict, method: dict, training: dict, reranking: dict, execution: dict, threads: int,
                    weights: str, sample: Callable[[list[str]], list[str]] | None = None) -> tuple[Run, dict]:
    """Scores of the kept weights ``weights`` for the test fold's BM25 candidates: all its queries, or those
    ``sample`` picks from them (``peftir audit --rescore`` checks a run file this way); and the device and
    precision they were computed in."""
    seed_everything(seed)
    placement = Execution.of(execution, threads)
    model, _, tokenizer = configured_ranker(ranker, backbone, settings, method, training["lr"], placement)
    load_learned_state(model, saved_weights(weights, model)["state"])
    test = folds.rotation(folds.read_folds(collection.folds), fold)["test"]
    qids = sample(test) if sample else test
    data = ranking_data(collection, candidates, qids, reranking["depth"], tokenizer, settings, keep_docs=False)
    return rerank(model, data, qids, reranking["batch_size"], desc="test"), placement.used()


def rerank_test_fold(collection: Collection, candidates: str, dataset: str, fold: str, seed: int, ranker: str,
                     backbone: dict, settings: dict, method: dict, training: dict, reranking: dict, execution: dict,
                     threads: int, weights: str, output: str, metadata: str) -> None:
    """The ``rerank`` rule: a trained run's kept weights rerank the test fold's BM25 candidates, written
    as a TREC run, with its ir_metadata beside it naming the ranker, method and settings."""
    run, used = score_test_fold(collection, candidates, fold, seed, ranker, backbone, settings, method, training,
                                reranking, execution, threads, weights)
    tag = f"{ranker}-{method['name']}-{fold}-{seed}"
    about = {"retrieval": f"BM25 top-{reranking['depth']}, reranked", "ranker": ranker, "fine-tuning": method,
             "backbone": backbone, "training": training, "seed": seed, "execution": used}
    report_missing(answered_queries(run), folds.rotation(folds.read_folds(collection.folds), fold)["test"], output)
    write_run(output, run, tag=tag)
    write_ir_metadata(metadata, ir_metadata(tag, about, {"name": dataset, "fold": fold,
                                                         "queries": "the fold's test queries"}))

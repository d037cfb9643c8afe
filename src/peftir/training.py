"""The paper's training loop (CEDR style): pairwise softmax loss, Adam, best-validation epoch.

One epoch = ``pairs_per_epoch`` (query, relevant, non-relevant) triples drawn
from the training queries' BM25 candidates, in batches of ``batch_size``
(accumulated over micro-batches). After every epoch the validation queries
are reranked and scored; the weights of the best epoch are kept.
"""
from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from .data import RankingData
from .methods import ParamGroups, learned_state
from .rankers import Ranker
from .rerank import batches, progress

Triple = tuple[str, str, str]


def pairwise_loss(pos: Tensor, neg: Tensor) -> Tensor:
    """Paper eq. 1: mean of 1 − softmax([s+, s−])[0]."""
    return (1.0 - torch.softmax(torch.stack([pos, neg], dim=1), dim=1)[:, 0]).mean()


def seed_everything(seed: int) -> None:
    """Python, NumPy and torch RNGs from one seed, deterministic kernels: same seed, same run file."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # deterministic cuBLAS on GPUs
    torch.use_deterministic_algorithms(True, warn_only=True)      # CUDA's index_add has no deterministic kernel


def trainable_queries(data: RankingData, qids: list[str]) -> list[str]:
    """Queries with at least one relevant and one non-relevant candidate; others cannot form a triple."""
    usable = []
    for qid in qids:
        judged = data.qrels.get(qid, {})
        relevant = [d for d in data.candidates.get(qid, {}) if judged.get(d, 0) > 0]
        if relevant and len(relevant) < len(data.candidates[qid]):
            usable.append(qid)
    return usable


def sample_triples(rng: random.Random, data: RankingData, qids: list[str], count: int) -> list[Triple]:
    """Random query; positive = a relevant candidate; negative = a candidate not judged relevant."""
    triples = []
    for _ in range(count):
        qid = rng.choice(qids)
        judged = data.qrels.get(qid, {})
        docs = sorted(data.candidates[qid])
        triples.append((qid, rng.choice([d for d in docs if judged.get(d, 0) > 0]),
                        rng.choice([d for d in docs if judged.get(d, 0) <= 0])))
    return triples


@dataclass
class TrainResult:
    best_state: dict[str, Tensor]
    best_epoch: int
    best_score: float
    history: list[dict] = field(default_factory=list)


def train_epoch(ranker: Ranker, optimizer: torch.optim.Optimizer, data: RankingData, triples: list[Triple],
                batch_size: int, micro_batch: int, epoch: int) -> float:
    """One pass over ``triples``; returns the mean loss."""
    ranker.train()
    total = 0.0
    with progress(len(triples), f"epoch {epoch} train") as bar:
        for batch in batches(triples, batch_size):
            optimizer.zero_grad()
            for micro in batches(batch, micro_batch):
                queries = [data.queries[q] for q, _, _ in micro] * 2
                docs = [data.docs[p] for _, p, _ in micro] + [data.docs[n] for _, _, n in micro]
                scores = ranker.score_pairs(queries, docs)
                loss = pairwise_loss(scores[:len(micro)], scores[len(micro):])
                (loss * len(micro) / len(batch)).backward()
                total += loss.item() * len(micro)
                bar.update(len(micro))
            optimizer.step()
    return total / len(triples)


def train(ranker: Ranker, groups: ParamGroups, data: RankingData, train_qids: list[str],
          validate: Callable[[Ranker], float], settings: dict, seed: int) -> TrainResult:
    """Train for ``settings['epochs']`` epochs, validating after each; keep the best epoch's weights."""
    optimizer = torch.optim.Adam(groups, weight_decay=0.0)
    rng = random.Random(seed)
    qids = trainable_queries(data, train_qids)
    if not qids:
        raise ValueError("no training query has both a relevant and a non-relevant BM25 candidate")
    result = TrainResult(best_state=learned_state(ranker), best_epoch=0, best_score=float("-inf"))
    for epoch in range(1, settings["epochs"] + 1):
        start = time.time()
        triples = sample_triples(rng, data, qids, settings["pairs_per_epoch"])
        loss = train_epoch(ranker, optimizer, data, triples, settings["batch_size"], settings["micro_batch"], epoch)
        score = validate(ranker)
        result.history.append({"epoch": epoch, "loss": loss, "validation": score, "seconds": time.time() - start})
        print(f"epoch {epoch}: loss {loss:.4f} validation {score:.4f}", file=sys.stderr, flush=True)
        if score > result.best_score:
            result.best_state, result.best_epoch, result.best_score = learned_state(ranker), epoch, score
    return result

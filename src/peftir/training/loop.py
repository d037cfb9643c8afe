"""The paper's training loop (CEDR style): pairwise softmax loss, Adam, best-validation epoch.

One epoch = ``pairs_per_epoch`` (query, relevant, non-relevant) triples drawn
from the training queries' BM25 candidates, in batches of ``batch_size``
(accumulated over micro-batches). After every epoch the validation queries
are reranked and scored; the weights of the best epoch are kept.

At the end of every epoch the whole training state (learned weights, optimizer,
RNG states, history, best epoch so far) is saved to a checkpoint
(``peftir.training.checkpoint``), so a job killed by a time limit or preemption
resumes from its last completed epoch and ends exactly where an uninterrupted
run ends.
"""
from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from ..methods.base import ParamGroups
from ..methods.learned import learned_state, load_learned_state
from ..rankers.inputs import RankingData
from ..rankers.models import Ranker
from ..rankers.rerank import batches, progress
from .checkpoint import Checkpoint, restore_rng_states, rng_states

Triple = tuple[str, str, str]


def pairwise_loss(pos: Tensor, neg: Tensor) -> Tensor:
    """Paper eq. 1: mean of 1 − softmax([s+, s−])[0]."""
    return (1.0 - torch.softmax(torch.stack([pos, neg], dim=1), dim=1)[:, 0]).mean()


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
          validate: Callable[[Ranker], float], settings: dict, seed: int,
          checkpoint: Checkpoint | None = None) -> TrainResult:
    """Train for ``settings['epochs']`` epochs, validating after each; keep the best epoch's weights.

    With a ``checkpoint``, resume from its last completed epoch when it holds one of this job.
    """
    optimizer = torch.optim.Adam(groups, weight_decay=0.0)
    rng = random.Random(seed)
    qids = trainable_queries(data, train_qids)
    if not qids:
        raise ValueError("no training query has both a relevant and a non-relevant BM25 candidate")
    result = TrainResult(best_state=learned_state(ranker), best_epoch=0, best_score=float("-inf"))
    done = 0
    saved = checkpoint.load() if checkpoint else None
    if saved:
        load_learned_state(ranker, saved["learned"])
        optimizer.load_state_dict(saved["optimizer"])
        restore_rng_states(rng, saved["rng"])
        done = saved["epoch"]
        best = {name: tensor.to(ranker.device) for name, tensor in saved["best_state"].items()}
        result = TrainResult(best, saved["best_epoch"], saved["best_score"], saved["history"])
        print(f"resumed from the checkpoint of epoch {done}", file=sys.stderr, flush=True)
    for epoch in range(done + 1, settings["epochs"] + 1):
        start = time.time()
        triples = sample_triples(rng, data, qids, settings["pairs_per_epoch"])
        loss = train_epoch(ranker, optimizer, data, triples, settings["batch_size"], settings["micro_batch"], epoch)
        score = validate(ranker)
        result.history.append({"epoch": epoch, "loss": loss, "validation": score, "seconds": time.time() - start})
        print(f"epoch {epoch}: loss {loss:.4f} validation {score:.4f}", file=sys.stderr, flush=True)
        if score > result.best_score:
            result.best_state, result.best_epoch, result.best_score = learned_state(ranker), epoch, score
        if checkpoint:
            checkpoint.save({"epoch": epoch, "learned": learned_state(ranker), "optimizer": optimizer.state_dict(),
                             "rng": rng_states(rng), "best_state": result.best_state,
                             "best_epoch": result.best_epoch, "best_score": result.best_score,
                             "history": result.history})
    return result

"""The paper's training loop (CEDR style): pairwise softmax loss, Adam, best-validation epoch.

One epoch = ``pairs_per_epoch`` (query, relevant, non-relevant) triples drawn
from the training queries' BM25 candidates, in batches of ``batch_size``
(accumulated over micro-batches). After every epoch the validation queries
are reranked and scored; the weights of the best epoch are kept.

At the end of every epoch the whole training state (learned weights, optimizer,
RNG states, history, best epoch so far) is saved atomically to a checkpoint, so
a job killed by a time limit or preemption resumes from its last completed
epoch and ends exactly where an uninterrupted run ends.
"""
from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from .data import RankingData
from .methods import ParamGroups, learned_state, load_learned_state
from .rankers import Ranker
from .rerank import batches, progress
from .trec import atomic_write

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


@dataclass
class Checkpoint:
    """Where a job keeps its training state between epochs, and what it must match to be resumed.

    ``key`` identifies the job's settings (params, inputs): a checkpoint left by a job whose
    settings have since changed is ignored rather than resumed.
    """

    path: Path
    key: str

    def save(self, state: dict) -> None:
        with atomic_write(self.path, "wb") as handle:
            torch.save({"key": self.key, **state}, handle)

    def load(self) -> dict | None:
        """The saved state (on the CPU: RNG states must stay there), or None if absent or of other settings."""
        if not self.path.exists():
            return None
        state = torch.load(self.path, map_location="cpu", weights_only=False)
        return state if state.get("key") == self.key else None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _rng_states(rng: random.Random) -> dict:
    states = {"sampling": rng.getstate(), "python": random.getstate(), "numpy": np.random.get_state(),
              "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _restore_rng_states(rng: random.Random, states: dict) -> None:
    rng.setstate(states["sampling"])
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


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
        _restore_rng_states(rng, saved["rng"])
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
                             "rng": _rng_states(rng), "best_state": result.best_state,
                             "best_epoch": result.best_epoch, "best_score": result.best_score,
                             "history": result.history})
    return result

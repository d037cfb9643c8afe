"""The paper's training loop (CEDR style): pairwise softmax loss, Adam, best-validation epoch.

One epoch = ``pairs_per_epoch`` (query, relevant, non-relevant) triples from a pair source, in
batches of ``batch_size``: sampled from the training queries' BM25 candidates (Robust04,
ClueWeb09b) or read from fixed training triples (MS MARCO). After every epoch the validation
queries are reranked and scored; the weights of the best epoch are kept.

A batch's triples go through the ranker in passes of as many triples as the execution decides
(``micro_batch``: ``auto``, the whole batch where it fits; a number, e.g. the released code's
micro-batches of 2), their gradients accumulated: the same gradient at any pass size, up to
float rounding and dropout's draws. A bi-encoder encodes each query of a pass once for its
positive and its negative (the released code encodes it once per pair, with its own dropout
mask each time: a named difference). The host reads the loss once per epoch.

At the end of every epoch the whole training state (learned weights, optimizer,
RNG states, history, best epoch so far) is saved to a checkpoint
(``peftir.training.checkpoint``), so a job killed by a time limit or preemption
resumes from its last completed epoch and ends exactly where an uninterrupted
run ends.
"""
from __future__ import annotations

import itertools
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import torch
from torch import Tensor

from ..data.trec import MalformedFileError
from ..execution.gradients import accumulate, clip, split
from ..execution.passes import Encoder, Shape
from .methods.base import ParamGroups
from ..models.learned import learned_state, load_learned_state
from ..models.inputs import RankingData
from .rankers import Ranker
from .rerank import batches, progress
from .. import progress_log
from ..training.checkpoint import Checkpoint, restore_rng_states, rng_states
from ..training.finite import read_losses

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


class PairSource(Protocol):
    """Where an epoch's (query, relevant, non-relevant) triples come from."""

    def epoch(self, number: int, rng: random.Random, count: int) -> list[Triple]: ...


class CandidateTriples:
    """The released code's sampling (CEDR's): each epoch walks the training queries in a fresh random
    order, cycling in a new order when it needs more triples than there are queries, and takes for each
    a relevant BM25 candidate and a candidate not judged relevant, both at random."""

    def __init__(self, data: RankingData, qids: list[str]) -> None:
        self.data, self.qids = data, trainable_queries(data, qids)
        if not self.qids:
            raise ValueError("no training query has both a relevant and a non-relevant BM25 candidate")

    def epoch(self, number: int, rng: random.Random, count: int) -> list[Triple]:
        triples: list[Triple] = []
        while len(triples) < count:
            order = list(self.qids)
            rng.shuffle(order)
            for qid in order[:count - len(triples)]:
                judged = self.data.qrels.get(qid, {})
                docs = sorted(self.data.candidates[qid])
                triples.append((qid, rng.choice([d for d in docs if judged.get(d, 0) > 0]),
                                rng.choice([d for d in docs if judged.get(d, 0) <= 0])))
        return triples


class TriplesFile:
    """Fixed triples (``qid<TAB>relevant<TAB>non-relevant`` lines, ``peftir.data.triples``) in file order,
    each epoch going on where the previous one stopped and wrapping around at the end: the released code
    reads MS MARCO's training triples this way. Only the epoch's lines are held in memory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with open(self.path) as handle:
            self.size = sum(1 for _ in handle)
        if not self.size:
            raise MalformedFileError(f"{self.path}: no training triples")

    def epoch(self, number: int, rng: random.Random, count: int) -> list[Triple]:
        start = (number - 1) * count % self.size
        triples: list[Triple] = []
        while len(triples) < count:
            with open(self.path) as handle:
                lines = itertools.islice(enumerate(handle, start=1), start, start + count - len(triples))
                triples += [self._triple(line, line_number) for line_number, line in lines]
            start = 0
        return triples

    def _triple(self, line: str, line_number: int) -> Triple:
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 3 or not all(fields):
            raise MalformedFileError(f"{self.path}, line {line_number}: expected qid<TAB>relevant<TAB>non-relevant, "
                                     f"got {line.rstrip()!r}")
        return fields[0], fields[1], fields[2]


@dataclass
class TrainResult:
    best_state: dict[str, Tensor]
    best_epoch: int
    best_score: float
    history: list[dict] = field(default_factory=list)


TokenTriple = tuple[list[int], list[int], list[int]]      # a triple's query, positive and negative word pieces


def triple_loss(ranker: Ranker, triples: list[TokenTriple]) -> Tensor:
    """The pairwise loss of ``triples``, every score from one ``score_candidates`` call."""
    queries, positives, negatives = (list(side) for side in zip(*triples))
    scores = ranker.score_candidates(queries, [positives, negatives])
    return pairwise_loss(scores[:, 0], scores[:, 1])


def train_step(ranker: Ranker, optimizer: torch.optim.Optimizer, batch: list[TokenTriple], rows: int,
               max_grad_norm: float | None = None) -> Tensor:
    """One update on ``batch``: its triples ``rows`` at a time, the gradients accumulated (each pass's loss
    weighted by its share of the batch), clipped to ``max_grad_norm`` when set (the released code does not clip),
    applied, in the execution's ``training_step`` (TF32 where it chose bf16 on a GPU). Returns the batch's mean loss,
    on the device (float64), without waiting for it."""
    with ranker.execution.training_step():
        optimizer.zero_grad()
        loss = accumulate(split(batch, rows), lambda part: triple_loss(ranker, part))
        clip((p for group in optimizer.param_groups for p in group["params"]), max_grad_norm)
        optimizer.step()
    return loss


def train_rows(ranker: Ranker, settings: dict) -> int:
    """Triples per pass: the execution's decision for ``settings['micro_batch']`` (``auto`` or a number) at the
    ranker's longest triple; recorded in the job's execution facts as ``train``."""
    return ranker.execution.rows_per_pass("train", settings["micro_batch"], settings["batch_size"],
                                          Encoder.of(ranker.bert.config, ranker),
                                          Shape(ranker.triple_tokens(), True, sequence=ranker.max_seq_len))


def train_epoch(ranker: Ranker, optimizer: torch.optim.Optimizer, data: RankingData, triples: list[Triple],
                batch_size: int, rows: int, epoch: int, max_grad_norm: float | None = None) -> float:
    """One pass over ``triples`` in batches of ``batch_size`` (``train_step``, ``rows`` triples a pass); returns the
    mean loss, read once (a non-finite batch loss stops training, naming the batch: ``read_losses``)."""
    ranker.train()
    losses = []
    progress_log.start(f"epoch {epoch}", len(triples), "triples")
    with progress(len(triples), f"epoch {epoch} train") as bar:
        for batch in batches(triples, batch_size):
            texts = list(zip(data.queries.many([q for q, _, _ in batch]), data.docs.many([p for _, p, _ in batch]),
                             data.docs.many([n for _, _, n in batch])))
            losses.append(train_step(ranker, optimizer, texts, rows, max_grad_norm) * len(batch))
            bar.update(len(batch))
            progress_log.advance(f"epoch {epoch}", len(batch))
    progress_log.finish(f"epoch {epoch}")
    return sum(read_losses(losses, 1, f"epoch {epoch}, batch {{}}")) / len(triples)


def train(ranker: Ranker, groups: ParamGroups, data: RankingData, pairs: PairSource,
          validate: Callable[[Ranker], float], settings: dict, seed: int,
          checkpoint: Checkpoint | None = None) -> TrainResult:
    """Train for ``settings['epochs']`` epochs on ``pairs`` (their texts from ``data``), validating after each;
    keep the best epoch's weights. With a ``checkpoint``, resume from its last completed epoch when it holds
    one of this job."""
    optimizer = torch.optim.Adam(groups, weight_decay=0.0)
    rng = random.Random(seed)
    result = TrainResult(best_state=learned_state(ranker), best_epoch=0, best_score=float("-inf"))
    done = 0
    saved = checkpoint.load() if checkpoint else None
    if saved:
        load_learned_state(ranker, saved["learned"])
        optimizer.load_state_dict(saved["optimizer"])
        restore_rng_states(rng, saved["rng"])
        done = saved["epoch"]
        best = {name: tensor.to(ranker.execution.device) for name, tensor in saved["best_state"].items()}
        result = TrainResult(best, saved["best_epoch"], saved["best_score"], saved["history"])
        print(f"resumed from the checkpoint of epoch {done}", file=sys.stderr, flush=True)
    rows = train_rows(ranker, settings)
    progress_log.start("training epochs", settings["epochs"] - done, "epochs")
    for epoch in range(done + 1, settings["epochs"] + 1):
        start = time.time()
        triples = pairs.epoch(epoch, rng, settings["pairs_per_epoch"])
        loss = train_epoch(ranker, optimizer, data, triples, settings["batch_size"], rows, epoch,
                           settings["max_grad_norm"])
        score = validate(ranker)
        result.history.append({"epoch": epoch, "loss": loss, "validation": score, "seconds": time.time() - start})
        print(f"epoch {epoch}: loss {loss:.4f} validation {score:.4f}", file=sys.stderr, flush=True)
        progress_log.advance("training epochs")
        if score > result.best_score:
            result.best_state, result.best_epoch, result.best_score = learned_state(ranker), epoch, score
        if checkpoint and epoch < settings["epochs"]:     # after the last one the job writes its outputs
            checkpoint.save({"epoch": epoch, "learned": learned_state(ranker), "optimizer": optimizer.state_dict(),
                             "rng": rng_states(rng), "best_state": result.best_state,
                             "best_epoch": result.best_epoch, "best_score": result.best_score,
                             "history": result.history})
    progress_log.finish("training epochs")
    return result

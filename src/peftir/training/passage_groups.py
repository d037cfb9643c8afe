"""Training groups of a retriever or reranker: each query with one positive and ``n − 1`` hard negatives.

Sampled as Tevatron's and DPTDR's ``TrainDataset`` do: an epoch visits the training queries in a seeded random
order; a query's positive rotates through its relevant documents from epoch to epoch; its negatives are its
pool (BM25's non-relevant candidates, or mined ones) in a fixed per-query shuffle, read as consecutive windows
of ``n − 1`` that move on each epoch, drawn with replacement when the pool is smaller than the window.

Pools are read from the runs one query at a time (``NegativePools``): at MS MARCO's shape (503 k training
queries, depth 1,000) they are 500 M run lines, which memory never holds.
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Collection, Iterator

from ..data import trec
from ..data.run_index import Ranked, RunIndex

Group = tuple[str, list[str]]          # a query id and its passages, the positive first


class NegativePools(Mapping):
    """Each query's negatives: the union of the runs' top ``depth`` documents (all: None) not judged relevant,
    read from the runs when asked (a ``RunIndex`` per run). Its keys are the queries with at least one."""

    def __init__(self, runs: list[str], qrels: trec.Qrels, qids: Collection[str], depth: int | None) -> None:
        self.qrels, self.depth = qrels, depth
        self.available: set[str] = set()

        def visit(qid: str, documents: Ranked) -> None:
            if self.non_relevant(qid, documents):
                self.available.add(qid)

        self.indexes = [RunIndex(path, qids, visit) for path in runs]

    def non_relevant(self, qid: str, documents: Ranked) -> list[str]:
        return trec.not_relevant(self.qrels, qid, (doc for doc, _ in documents[:self.depth]))

    def __getitem__(self, qid: str) -> list[str]:
        if qid not in self.available:
            raise KeyError(qid)
        return sorted({doc for index in self.indexes for doc in self.non_relevant(qid, index.top(qid))})

    def __contains__(self, qid: object) -> bool:
        return qid in self.available

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.available))

    def __len__(self) -> int:
        return len(self.available)


@dataclass
class PassageGroups:
    positives: dict[str, list[str]]
    negatives: Mapping[str, list[str]]  # a query's non-empty pool (``NegativePools``, judged negatives); else left out
    passages: int                      # n: one positive and n − 1 negatives per query
    seed: int

    def __post_init__(self) -> None:
        self.qids = sorted(q for q in self.positives if self.positives[q] and q in self.negatives)
        if not self.qids:
            raise ValueError("no training query has both a relevant document and a negative")

    def pool(self, qid: str) -> list[str]:
        """The query's negatives in their fixed per-query shuffle."""
        pool = sorted(self.negatives[qid])
        random.Random(f"{self.seed}:{qid}").shuffle(pool)
        return pool

    def group(self, qid: str, epoch: int, rng: random.Random) -> Group:
        relevant = sorted(self.positives[qid])
        positive = relevant[epoch % len(relevant)]
        pool, wanted = self.pool(qid), self.passages - 1
        if len(pool) < wanted:
            negatives = rng.choices(pool, k=wanted)
        else:
            start = epoch * wanted % len(pool)
            negatives = (pool[start:] + pool[:start])[:wanted]
        return qid, [positive, *negatives]

    def batches(self, batch_size: int):
        """Batches of ``batch_size`` groups forever, epoch after epoch (the last short batch of an epoch is
        dropped, so every batch has the same number of in-batch negatives)."""
        rng, epoch = random.Random(self.seed), 0
        if batch_size > len(self.qids):
            raise ValueError(f"batch of {batch_size} queries but only {len(self.qids)} training queries")
        while True:
            order = list(self.qids)
            rng.shuffle(order)
            for start in range(0, len(order) - batch_size + 1, batch_size):
                yield [self.group(qid, epoch, rng) for qid in order[start:start + batch_size]]
            epoch += 1

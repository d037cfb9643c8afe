"""Training groups of a dense retriever: each query with one positive and ``n − 1`` hard negatives.

Sampled as Tevatron's and DPTDR's ``TrainDataset`` do: an epoch visits the training queries in a seeded random
order; a query's positive rotates through its relevant documents from epoch to epoch; its negatives are its
pool (BM25's non-relevant candidates, or mined ones) in a fixed per-query shuffle, read as consecutive windows
of ``n − 1`` that move on each epoch, drawn with replacement when the pool is smaller than the window.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

Group = tuple[str, list[str]]          # a query id and its passages, the positive first


@dataclass
class PassageGroups:
    positives: dict[str, list[str]]
    negatives: dict[str, list[str]]
    passages: int                      # n: one positive and n − 1 negatives per query
    seed: int

    def __post_init__(self) -> None:
        self.qids = sorted(q for q in self.positives if self.positives[q] and self.negatives.get(q))
        if not self.qids:
            raise ValueError("no training query has both a relevant document and a negative")
        self._pools = {}
        for qid in self.qids:
            pool = sorted(self.negatives[qid])
            random.Random(f"{self.seed}:{qid}").shuffle(pool)
            self._pools[qid] = pool

    def group(self, qid: str, epoch: int, rng: random.Random) -> Group:
        relevant = sorted(self.positives[qid])
        positive = relevant[epoch % len(relevant)]
        pool, wanted = self._pools[qid], self.passages - 1
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

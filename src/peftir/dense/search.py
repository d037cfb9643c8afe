"""A dense retriever over a whole corpus: every document encoded once into a faiss index, every query searched.

The ``dense_index`` rule encodes the corpus with a trained retriever (or a backbone as it comes: the tables'
untrained rows), a window of documents at a time, into the shards of an exact (``flat``) or approximate
(``hnsw``) inner-product index; ``dense_search`` encodes
the dataset's queries, all of them (the test fold's are evaluated, the training queries' top documents are what
UNM mines), and writes a TREC run with its ir_metadata. With an approximate index the search also runs exactly on
the same vectors and the recall of the approximate top documents against the exact ones goes into the
metadata: the loss the option costs, measured rather than assumed.
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from ..data import trec
from .. import progress_log
from ..data.docstore import document_windows
from ..data.empty_documents import is_empty
from ..execution.seam import Execution
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from .train import build_retriever, load_retriever
from ..retrieval import faiss_index
from ..retrieval.dense_retriever import PASSAGE, QUERY, DenseRetriever, encode_all

UNTRAINED = {"name": "ft"}      # a backbone as it comes is a full fine-tuning retriever before any step


def retriever(spec: dict, search: dict, threads: int, trained: str | None = None) -> DenseRetriever:
    """The retriever ``spec`` (the ``retriever`` param: backbone, layers, method, execution) trained in
    ``trained``, or the backbone's [CLS] untrained, placed as the spec's execution says."""
    execution = Execution.of(spec["execution"], threads)
    if trained is None:
        return build_retriever(spec["backbone"], spec["layers"], UNTRAINED, search, execution).eval()
    return load_retriever(spec["backbone"], spec["layers"], spec["method"], search, trained, execution)


def index_corpus(spec: dict, search: dict, docs: str, threads: int, output: str, trained: str | None = None) -> dict:
    """The ``dense_index`` rule: the corpus's vectors (by the retriever ``spec``, trained in ``trained`` or not)
    into a faiss index directory, a window of documents (one shard) at a time, those with no text too; returns its
    facts (with how many documents had no text), which the log shows."""
    model = retriever(spec, search, threads, trained)
    encoding = 0.0
    empty_texts = 0

    def shards() -> Iterator[tuple[np.ndarray, list[str]]]:
        nonlocal encoding, empty_texts
        progress_log.start("encoding the corpus", progress_log.lines_of(docs), "documents")
        for ids, texts in document_windows(docs):
            empty_texts += sum(map(is_empty, texts))     # encoded all the same, from the special tokens alone
            started = time.monotonic()
            vectors = encode_all(model, texts, PASSAGE, search["batch_size"])
            encoding += time.monotonic() - started
            progress_log.advance("encoding the corpus", len(ids))
            yield vectors, ids
        progress_log.finish("encoding the corpus")

    started = time.monotonic()
    facts = faiss_index.write(output, shards(), search["index"], search["hnsw_m"], search["ef_search"])
    return {**facts, "empty_texts": empty_texts, "encoding_seconds": round(encoding, 1),
            "indexing_seconds": round(time.monotonic() - started - encoding, 1)}


def search_queries(spec: dict, search: dict, index: str, queries: str, threads: int, about: dict, run: str,
                   metadata: str, trained: str | None = None) -> dict:
    """The ``dense_search`` rule: every query's top ``depth`` documents as a TREC run, with its ir_metadata
    (the retriever, the index, and for an approximate index its recall against exact search); returns the
    facts with the search time, which the log shows (a rerun must write the same metadata, so no time there).
    Queries are encoded, searched and written ``trec.QUERY_BLOCK`` at a time: MS MARCO's 509 k queries × 1,000
    documents are never held."""
    model = retriever(spec, search, threads, trained)
    topics = trec.read_topics(queries)
    qids = sorted(topics)
    searched = faiss_index.read(index, threads, model.execution)
    seconds, shares = 0.0, []

    def ranked() -> Iterator[tuple[str, faiss_index.Hits]]:
        nonlocal seconds
        progress_log.start("searching the queries", len(qids), "queries")
        for block in trec.query_blocks(qids):
            vectors = encode_all(model, [topics[qid] for qid in block], QUERY, search["batch_size"])
            started = time.monotonic()
            hits = searched.search(vectors, search["depth"])
            seconds += time.monotonic() - started
            if search["index"] != "flat":
                shares.extend(faiss_index.overlaps(hits, searched.exact().search(vectors, search["depth"])))
            progress_log.advance("searching the queries", len(block))
            yield from zip(block, hits)
        progress_log.finish("searching the queries")

    tag = "-".join(str(about[key]) for key in ("backbone", "retriever", "negatives", "fold", "seed") if key in about)
    trec.write_run(run, ranked(), tag=tag)
    facts = {"index": search["index"], "depth": search["depth"], "queries": len(qids), "documents": len(searched.ids)}
    if search["index"] != "flat":
        facts["recall_against_exact"] = faiss_index.mean_overlap(shares)
    write_ir_metadata(metadata, ir_metadata(tag, {"retrieval": "dense, full corpus (faiss)", "retriever": spec,
                                                  "search": {**search, **facts}, "execution": model.execution.used(),
                                                  **about},
                                            {"name": about["dataset"], "queries": "every query of the dataset"}))
    return {**facts, "ms_per_query": round(1000 * seconds / max(1, len(qids)), 3)}

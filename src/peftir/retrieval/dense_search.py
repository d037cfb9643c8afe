"""A dense retriever over a whole corpus: every document encoded once into a faiss index, every query searched.

The ``dense_index`` rule encodes the corpus with a trained retriever (or a backbone as it comes: the tables'
untrained rows) into an exact (``flat``) or approximate (``hnsw``) inner-product index; ``dense_search`` encodes
the dataset's queries, all of them (the test fold's are evaluated, the training queries' top documents are what
UNM mines), and writes a TREC run with its ir_metadata. With an approximate index the search also runs exactly on
the same vectors and the recall of the approximate top documents against the exact ones goes into the
metadata: the loss the option costs, measured rather than assumed.
"""
from __future__ import annotations

import json
import time

import numpy as np
import torch

from ..data import trec
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from ..training.train_retriever import build_retriever, load_retriever
from . import faiss_index
from .dense_retriever import PASSAGE, QUERY, DenseRetriever, encode_all

UNTRAINED = {"name": "ft"}      # a backbone as it comes is a full fine-tuning retriever before any step


def retriever(spec: dict, search: dict, trained: str | None = None) -> DenseRetriever:
    """The retriever ``spec`` (the ``retriever`` or ``untrained`` param: backbone, layers, method) trained in
    ``trained``, or the backbone's [CLS] untrained."""
    if trained is None:
        return build_retriever(spec["backbone"], spec["layers"], UNTRAINED, search).eval()
    return load_retriever(spec["backbone"], spec["layers"], spec["method"], search, trained)


def read_documents(docs: str) -> tuple[list[str], list[str]]:
    """A collection's document ids and texts, in file order (``docs.jsonl``: id, contents)."""
    ids, texts = [], []
    with open(docs, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                document = json.loads(line)
                ids.append(document["id"])
                texts.append(document["contents"])
            except (ValueError, KeyError) as problem:
                raise ValueError(f"{docs}:{number}: not a document line ({problem})") from None
    return ids, texts


def index_corpus(spec: dict, search: dict, docs: str, threads: int, output: str, trained: str | None = None) -> dict:
    """The ``dense_index`` rule: the corpus's vectors (by the retriever ``spec``, trained in ``trained`` or not)
    into a faiss index directory; returns its facts, which the log shows."""
    torch.set_num_threads(threads)
    started = time.monotonic()
    model = retriever(spec, search, trained)
    ids, texts = read_documents(docs)
    vectors = encode_all(model, texts, PASSAGE, search["batch_size"])
    encoded = time.monotonic()
    faiss_index.write(faiss_index.build(vectors, ids, search["index"], search["hnsw_m"], search["ef_search"]), output)
    return {"documents": len(ids), "encoding_seconds": round(encoded - started, 1),
            "indexing_seconds": round(time.monotonic() - encoded, 1)}


def search_queries(spec: dict, search: dict, index: str, queries: str, threads: int, about: dict, run: str,
                   metadata: str, trained: str | None = None) -> dict:
    """The ``dense_search`` rule: every query's top ``depth`` documents as a TREC run, with its ir_metadata
    (the retriever, the index, and for an approximate index its recall against exact search); returns the
    facts with the search time, which the log shows (a rerun must write the same metadata, so no time there)."""
    torch.set_num_threads(threads)
    model = retriever(spec, search, trained)
    topics = trec.read_topics(queries)
    qids = sorted(topics)
    with torch.no_grad():
        vectors = np.concatenate([model.encode([topics[qid] for qid in qids[start:start + search["batch_size"]]],
                                               QUERY).float().cpu().numpy()
                                  for start in range(0, len(qids), search["batch_size"])])
    searched = faiss_index.read(index, threads)
    started = time.monotonic()
    hits = searched.search(vectors, search["depth"])
    seconds = time.monotonic() - started
    facts = {"index": search["index"], "depth": search["depth"], "queries": len(qids), "documents": len(searched.ids)}
    if search["index"] != "flat":
        exact = searched.exact().search(vectors, search["depth"])
        facts["recall_against_exact"] = faiss_index.recall_against_exact(hits, exact)
    tag = "-".join(str(about[key]) for key in ("backbone", "retriever", "negatives", "fold", "seed") if key in about)
    trec.write_run(run, dict(zip(qids, hits)), tag=tag)
    write_ir_metadata(metadata, ir_metadata(tag, {"retrieval": "dense, full corpus (faiss)", "retriever": spec,
                                                  "search": {**search, **facts}, **about},
                                            {"name": about["dataset"], "queries": "every query of the dataset"}))
    return {**facts, "ms_per_query": round(1000 * seconds / max(1, len(qids)), 3)}

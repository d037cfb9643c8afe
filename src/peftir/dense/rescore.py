"""A dense run re-derived from its weights for ``peftir audit --rescore N``: the two things a forged run could fake.

A dense run's scores are inner products of a query's vector with the index's document vectors. Rescoring a sample
of its queries checks both ends: the queries are encoded again with the stored weights; every document the run
holds for them must have the run's score against its stored vector, and the stored index searched again with the
job's own code (``faiss_index``) must find nothing above the run's last score that the run lacks; and the top
documents of each sampled query are encoded again from their text with the same weights, whose inner products with
the query must be the run's scores too, so the index's vectors are shown to come from those weights and documents
(an index rebuilt from other weights, with a run searched in it, passes the first checks alone).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..data import trec
from ..retrieval import faiss_index
from ..retrieval.dense_retriever import PASSAGE, QUERY, encode_all
from ..retrieval.rescored import Rescored, precision_of, precision_ran, sample_queries, top_texts
from .search import retriever


def stored_vectors(index: faiss_index.DenseIndex, ids: set[str]) -> dict[str, np.ndarray]:
    """The index's vectors of ``ids``, read from its shards (memory-mapped) by row."""
    rows = {doc: row for row, doc in enumerate(index.ids) if doc in ids}
    found, offset = {}, 0
    for shard in index.shards:
        vectors = np.load(shard, mmap_mode="r")
        for doc, row in rows.items():
            if offset <= row < offset + len(vectors):
                found[doc] = np.asarray(vectors[row - offset], dtype=np.float32)
        offset += len(vectors)
    return found


def rescore_dense_run(run_path: str, record: dict, queries: int) -> Rescored:
    """The run ``run_path`` (made by ``record``, a ``dense_search`` job's) re-derived on ``queries`` of its
    queries."""
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    spec, search = record["params"]["retriever"], record["params"]["dense_search"]
    model = retriever(spec, search, 1, inputs.get("model"))
    stored, topics = trec.read_run(run_path), trec.read_topics(inputs["queries"])
    sample = sample_queries(run_path, stored, topics, queries)
    vectors = encode_all(model, [topics[qid] for qid in sample], QUERY, search["batch_size"])
    index = faiss_index.read(inputs["index"], 1, model.execution)
    kind = json.loads((Path(inputs["index"]) / faiss_index.ABOUT).read_text())["kind"]
    held = stored_vectors(index, {doc for qid in sample for doc in stored[qid]})
    found = Rescored(dict(zip(sample, index.search(vectors, search["depth"]))), exact_search=kind == "flat",
                     exact={qid: {doc: float(vector @ held[doc]) for doc in stored[qid] if doc in held}
                            for qid, vector in zip(sample, vectors)},
                     ran=precision_ran(record), used=precision_of(model.execution))
    read = top_texts(found, inputs["index"], stored, sample)
    if read is None:
        return found
    tops, texts = read
    wanted = sorted(texts)
    passages = dict(zip(wanted, encode_all(model, [texts[doc] for doc in wanted], PASSAGE, search["batch_size"])))
    found.encoded = {qid: {doc: float(vector @ passages[doc]) for doc in tops[qid] if doc in passages}
                     for qid, vector in zip(sample, vectors)}
    return found

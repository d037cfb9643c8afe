"""A dense run re-derived from its weights for ``peftir audit --rescore N``: the two things a forged run could fake.

A dense run's scores are inner products of a query's vector with the index's document vectors. Rescoring a sample
of its queries checks both ends: the queries are encoded again with the stored weights and searched in the stored
index with the job's own code (``faiss_index``), which must give the run's documents and scores; and the top
documents of each sampled query are encoded again from their text with the same weights, whose inner products with
the query must be the run's scores too, so the index's vectors are shown to come from those weights and documents
(an index rebuilt from other weights, with a run searched in it, passes the first check alone).
"""
from __future__ import annotations

from pathlib import Path

from ..data import trec
from ..provenance.records import read_record
from ..retrieval import faiss_index
from ..retrieval.dense_retriever import PASSAGE, QUERY, encode_all
from ..retrieval.rescored import Rescored, sample_queries, texts_of, top_documents
from .search import retriever


def rescore_dense_run(run_path: str, record: dict, queries: int) -> Rescored:
    """The run ``run_path`` (made by ``record``, a ``dense_search`` job's) re-derived on ``queries`` of its
    queries."""
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    spec, search = record["params"]["retriever"], record["params"]["dense_search"]
    model = retriever(spec, search, 1, inputs.get("model"))
    used = "bf16" if model.execution.autocast is not None else "fp32"
    stored, topics = trec.read_run(run_path), trec.read_topics(inputs["queries"])
    sample = sample_queries(run_path, stored, topics, queries)
    vectors = encode_all(model, [topics[qid] for qid in sample], QUERY, search["batch_size"])
    index = faiss_index.read(inputs["index"], 1, model.execution)
    found = Rescored(dict(zip(sample, index.search(vectors, search["depth"]))), asked=spec["execution"]["precision"],
                     used=used)
    docs = next(iter(read_record(inputs["index"])["inputs"]["docs"]))
    if not Path(docs).is_file():
        found.not_encoded = f"the documents {docs} the index was encoded from are not here"
        return found
    tops = top_documents(stored, sample)
    texts = texts_of(docs, {doc for top in tops.values() for doc in top})
    wanted = sorted(texts)
    passages = dict(zip(wanted, encode_all(model, [texts[doc] for doc in wanted], PASSAGE, search["batch_size"])))
    found.encoded = {qid: {doc: float(vector @ passages[doc]) for doc in tops[qid] if doc in passages}
                     for qid, vector in zip(sample, vectors)}
    return found

"""SPLADE's runs re-derived from their weights for ``peftir audit --rescore N``. A retriever's run as a dense run is
(``peftir.dense.rescore``): a sample of its queries encoded and quantised again with the stored weights and
searched in the stored impact index with Anserini, as the job searched them (the run's documents and scores must
come back), and each sampled query's top documents encoded and quantised again from their text, whose impact
products with the query must be the run's scores too (the index's vectors came from those weights and documents).
A reranker's run (Table 7): a sample of its queries' first-stage candidates scored again by the stored reranker.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..data import trec
from ..evaluation.metrics import evaluated_queries
from ..models.inputs import Collection
from ..provenance.records import read_record
from ..retrieval import anserini
from ..retrieval.rescored import Rescored, sample_queries, texts_of, top_documents
from . import impact
from .encoder import DOCUMENT, QUERY
from .search import LUCENE, quantised_vectors, trained_encoder
from .train_cross_encoder import reranked_queries, trained_reranker


def rescore_splade_run(run_path: str, record: dict, queries: int) -> Rescored:
    """The run ``run_path`` (made by ``record``, a ``splade_search`` job's) re-derived on ``queries`` of its
    queries."""
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    spec, settings = record["params"]["splade"], record["params"]["splade_index"]
    encoder = trained_encoder(spec, inputs["model"], inputs.get("backbone"), 1)
    used = "bf16" if encoder.execution.autocast is not None else "fp32"
    stored, topics = trec.read_run(run_path), trec.read_topics(inputs["queries"])
    sample = sample_queries(run_path, stored, topics, queries)
    vectors = dict(zip(sample, (impact.top_pieces(vector) for vector in quantised_vectors(
        encoder, [topics[qid] for qid in sample], QUERY, settings["quantisation"], settings["batch_size"]))))
    with tempfile.TemporaryDirectory(prefix="peftir-rescore-") as scratch:
        searched = Path(scratch) / "searched.run"
        anserini.impact_search(Path(inputs["index"]) / LUCENE,
                               [{qid: impact.query_text(vector) for qid, vector in vectors.items() if vector}],
                               searched, "rescore", settings["depth"], 1)
        again = trec.read_run(searched)
    found = Rescored({qid: again.get(qid, {}) for qid in sample}, asked=spec["execution"]["precision"], used=used)
    docs = next(iter(read_record(inputs["index"])["inputs"]["docs"]))
    if not Path(docs).is_file():
        found.not_encoded = f"the documents {docs} the index was encoded from are not here"
        return found
    tops = top_documents(stored, sample)
    texts = texts_of(docs, {doc for top in tops.values() for doc in top})
    wanted = sorted(texts)
    encoded = dict(zip(wanted, quantised_vectors(encoder, [texts[doc] for doc in wanted], DOCUMENT,
                                                 settings["quantisation"], settings["batch_size"])))
    found.encoded = {qid: {doc: float(sum(weight * encoded[doc].get(piece, 0)
                                          for piece, weight in vectors[qid].items()))
                           for doc in tops[qid] if doc in encoded} for qid in sample}
    return found


def rescore_splade_reranking(run_path: str, record: dict, queries: int) -> Rescored:
    """The run ``run_path`` (made by ``record``, a ``splade_rerank`` job's, Table 7) re-derived on ``queries`` of
    its queries: their first-stage candidates scored again by the stored reranker (``searched`` holds them)."""
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    spec, settings = record["params"]["splade_reranker"], record["params"]["splade_rerank"]
    model = trained_reranker(spec, 1, inputs["model"])
    stored = trec.read_run(run_path)
    collection = Collection.of(inputs)
    evaluated = evaluated_queries(collection.folds, record["wildcards"]["fold"], settings["scope"])
    sample = sample_queries(run_path, stored, dict.fromkeys(evaluated, ""), queries)
    return Rescored(dict(reranked_queries(model, collection, inputs["first_stage"], sample, settings)),
                    asked=spec["execution"]["precision"],
                    used="bf16" if model.execution.autocast is not None else "fp32")

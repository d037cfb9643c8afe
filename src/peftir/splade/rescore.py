"""SPLADE's runs re-derived from their weights for ``peftir audit --rescore N``. A retriever's run as a dense run is
(``peftir.dense.rescore``): a sample of its queries encoded and quantised again with the stored weights; every
document the run holds for them must have the run's score as the integer product of that query with its stored
vector, the stored impact index searched again with Anserini, as the job searched it, must find nothing above the
run's last score that the run lacks, and each sampled query's top documents encoded and quantised again from their
text must give the stored vectors (so the index's vectors came from those weights and documents).

Quantising rounds ``w × factor`` to an integer, and a weight computed in another batch differs from the job's by
about 1e-6: where it lies within ``NEAR_HALF`` of a rounding boundary its piece may round the other way here. Such
pieces are counted: a score may differ by the stored impacts of the query's pieces that could round either way
(``slack``), and a re-encoded document's impact by one where its weight could.

A reranker's run (Table 7): a sample of its queries' first-stage candidates scored again by the stored reranker.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

from ..data import trec
from ..evaluation.metrics import evaluated_queries
from ..models.inputs import Collection
from ..retrieval import anserini
from ..retrieval.rescored import Rescored, precision_of, precision_ran, sample_queries, top_texts
from . import impact
from .encoder import DOCUMENT, QUERY, Splade
from .search import LUCENE, VECTORS, trained_encoder
from .train_cross_encoder import reranked_queries, trained_reranker

NEAR_HALF = 1e-3        # of a unit of ``w × factor``: far beyond a batch's float differences, rare for a weight


def quantised_with_doubt(encoder: Splade, texts: list[str], role: str, factor: int
                         ) -> list[tuple[impact.Impacts, set[str]]]:
    """Each text's quantised vector, as the job's ``quantised_vectors`` makes it, with the pieces whose weight lies
    within ``NEAR_HALF`` of a rounding boundary (they may have rounded the other way in the job's batch)."""
    vocabulary = encoder.vocabulary()
    found = []
    with torch.no_grad():
        for start in range(0, len(texts), 16):
            weights = encoder.encode(texts[start:start + 16], role).float().cpu().numpy() * factor
            for row in weights:
                doubt = np.flatnonzero(np.abs(row - np.floor(row) - 0.5) < NEAR_HALF)
                found.append((impact.quantised(row / factor, vocabulary, factor),
                              {vocabulary[j] for j in doubt}))
    return found


def _stored_impacts(vectors: Path, ids: set[str]) -> dict[str, impact.Impacts]:
    found = {}
    for doc, impacts in impact.read_documents(vectors):
        if doc in ids:
            found[doc] = impacts
            if len(found) == len(ids):
                break
    return found


def _vectors_differ(doc: str, again: impact.Impacts, doubt: set[str], stored: impact.Impacts) -> str | None:
    for piece in sorted(set(again) | set(stored)):
        apart = abs(again.get(piece, 0) - stored.get(piece, 0))
        if apart > (1 if piece in doubt else 0):
            return (f"document {doc}: piece {piece!r} has impact {stored.get(piece, 0)} in the index, "
                    f"{again.get(piece, 0)} from its text and the weights")
    return None


def rescore_splade_run(run_path: str, record: dict, queries: int) -> Rescored:
    """The run ``run_path`` (made by ``record``, a ``splade_search`` job's) re-derived on ``queries`` of its
    queries."""
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    spec, settings = record["params"]["splade"], record["params"]["splade_index"]
    factor = settings["quantisation"]
    encoder = trained_encoder(spec, inputs["model"], inputs.get("backbone"), 1)
    stored, topics = trec.read_run(run_path), trec.read_topics(inputs["queries"])
    sample = sample_queries(run_path, stored, topics, queries)
    encoded = dict(zip(sample, quantised_with_doubt(encoder, [topics[qid] for qid in sample], QUERY, factor)))
    vectors = {qid: impact.top_pieces(vector) for qid, (vector, _) in encoded.items()}
    with tempfile.TemporaryDirectory(prefix="peftir-rescore-") as scratch:
        searched = Path(scratch) / "searched.run"
        anserini.impact_search(Path(inputs["index"]) / LUCENE,
                               [{qid: impact.query_text(vector) for qid, vector in vectors.items() if vector}],
                               searched, "rescore", settings["depth"], 1)
        again = trec.read_run(searched)
    held = _stored_impacts(Path(inputs["index"]) / VECTORS / "docs.jsonl",
                           {doc for qid in sample for doc in stored[qid]})
    found = Rescored({qid: again.get(qid, {}) for qid in sample}, ran=precision_ran(record),
                     used=precision_of(encoder.execution))
    for qid in sample:
        query, doubt = vectors[qid], encoded[qid][1]
        found.exact[qid] = {doc: float(sum(weight * held[doc].get(piece, 0) for piece, weight in query.items()))
                            for doc in stored[qid] if doc in held}
        found.slack[qid] = {doc: float(sum(held[doc].get(piece, 0) for piece in doubt)) for doc in found.exact[qid]}
    read = top_texts(found, inputs["index"], stored, sample)
    if read is None:
        return found
    texts = read[1]
    wanted = sorted(doc for doc in texts if doc in held)
    for doc, (vector, doubt) in zip(wanted, quantised_with_doubt(encoder, [texts[doc] for doc in wanted], DOCUMENT,
                                                                  factor)):
        found.vectors_differ = _vectors_differ(doc, vector or impact.EMPTY_DOCUMENT, doubt, held[doc])
        if found.vectors_differ:
            break
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
                    ran=precision_ran(record), used=precision_of(model.execution))

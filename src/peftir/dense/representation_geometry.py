"""Wang & Isola (2020)'s alignment and uniformity of a dense retriever's [CLS] vectors: DPTDR §4.4, Table 8.

Wang & Isola measure a representation f on the unit sphere, both lower-is-better:

- alignment  = E over positive pairs (x, y) of ||f(x) − f(y)||²          (their ℓ_align, α = 2), in [0, 4];
- uniformity = log E over x, y drawn from the data of exp(−t ||f(x) − f(y)||²)   (ℓ_uniform, t = 2): 0 when every
  vector is the same, about −4 for many spread over a high-dimensional sphere, −8 for two antipodal ones.

DPTDR prints both per backbone without saying how; its 161.4 / −13.8 (RoBERTa-large), 4.9 / −12.9 (coCondenser)
and 21.9 / −26.4 (RIP) are these measures on L2-normalised vectors × 100: our inference from their ranges, not the
paper's statement (docs/fidelity/dptdr.md). What they are taken over, ours:

- a positive pair is a test query of the fold and a passage judged relevant to it (qrels grade > 0), the pairs the
  retriever is asked to score high; a query's alignment is the mean over its positives and the file's the mean over
  queries, so every query weighs the same, as in the table's other columns; each pair's distance is kept, so a cell
  traces to its queries and the audit recomputes it;
- uniformity is over the distinct passages of those pairs: what a retriever ranks is passages, and their spread is
  what keeps an irrelevant one from scoring like a relevant one; pooling queries in would fold the query–passage
  gap (what alignment measures) into uniformity. Over distinct pairs i < j, as Wang & Isola's code (``torch.pdist``).

Passage vectors are the ones the retriever's index stores (its search scored exactly these), read a shard at a time,
only the rows wanted, the document ids streamed (MS MARCO's 8.8 M are never held); query vectors are encoded as
``dense_search`` encodes them: the same retriever, lengths and execution.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import fmean

import numpy as np

from ..data import folds, trec
from ..files import write_json
from ..contract.measures import ALIGNMENT, UNIFORMITY
from ..retrieval import faiss_index
from ..retrieval.dense_retriever import QUERY, encode_all
from .search import retriever
from ..evaluation.metrics import evaluated_qids

T = 2.0          # uniformity's t: Wang & Isola's default, and what DPTDR's printed values fit
BLOCK = 1_024    # passages per block of the pairwise distances (1,024 × MS MARCO's ~7,400 positives: 60 MB)
Pairs = dict[str, list[str]]          # a query's positives, in qrels order


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Each row on the unit sphere, in float64 (a zero vector has no direction: ValueError)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction on the sphere")
    return vectors / norms


def squared_distances(queries: np.ndarray, passages: np.ndarray) -> np.ndarray:
    """||q̂ − p̂||² of each row pair (row i of both), on normalised vectors."""
    return ((normalised(queries) - normalised(passages)) ** 2).sum(axis=1)


def uniformity(vectors: np.ndarray, t: float = T) -> float:
    """log of the mean of exp(−t ||x̂_i − x̂_j||²) over distinct pairs i < j, a block of rows at a time."""
    unit = normalised(vectors)
    count = len(unit)
    if count < 2:
        raise ValueError(f"uniformity needs two vectors or more, got {count}")
    total = 0.0
    for start in range(0, count, BLOCK):
        block = unit[start:start + BLOCK]
        distances = np.maximum(2.0 - 2.0 * block @ unit[start:].T, 0.0)     # rows i, columns j ≥ start
        above = np.triu(np.ones(distances.shape, dtype=bool), k=1)          # j > i
        total += float(np.exp(-t * distances[above]).sum())
    return math.log(total / (count * (count - 1) / 2))


def geometry(queries: dict[str, np.ndarray], passages: dict[str, np.ndarray], pairs: Pairs) -> dict:
    """Alignment per query (mean over its positives' squared distances, each kept) and its mean over queries;
    uniformity over ``passages``."""
    distances = {qid: dict(zip(docs, squared_distances(np.stack([queries[qid]] * len(docs)),
                                                       np.stack([passages[doc] for doc in docs])).tolist()))
                 for qid, docs in pairs.items()}
    return summary(distances, uniformity(np.stack([passages[doc] for doc in sorted(passages)])))


def summary(distances: dict[str, dict[str, float]], spread: float) -> dict:
    """The file's measures from each pair's squared distance and the passages' uniformity."""
    if not distances:
        raise ValueError("no query has a relevant passage in the index: nothing to align")
    per_query = {qid: {ALIGNMENT: fmean(found.values())} for qid, found in sorted(distances.items())}
    return {"mean": {ALIGNMENT: fmean(value[ALIGNMENT] for value in per_query.values()), UNIFORMITY: spread},
            "per_query": per_query, "distances": distances}


def index_rows(index: str | Path, wanted: set[str]) -> dict[str, int]:
    """The row of each wanted document among the index's vectors (its ``docid`` file read line by line)."""
    rows = {}
    with open(Path(index) / faiss_index.IDS, encoding="utf-8") as ids:
        for row, line in enumerate(ids):
            docid = line.rstrip("\n")
            if docid in wanted:
                rows[docid] = row
    return rows


def indexed_vectors(index: str | Path, rows: dict[str, int]) -> dict[str, np.ndarray]:
    """The vectors the index stores at ``rows`` (document → row), one memory-mapped shard at a time."""
    docids = list(rows)
    order = np.array([rows[docid] for docid in docids], dtype=np.int64)
    dimension = json.loads((Path(index) / faiss_index.ABOUT).read_text())["dimension"]
    found = np.empty((len(docids), dimension), dtype=np.float32)
    offset = 0
    for shard in sorted((Path(index) / faiss_index.SHARDS).iterdir()):
        vectors = np.load(shard, mmap_mode="r")
        inside = (order >= offset) & (order < offset + len(vectors))
        found[inside] = vectors[order[inside] - offset]
        offset += len(vectors)
    return dict(zip(docids, found))


def positive_pairs(index: str, qrels: str, folds_path: str, fold: str) -> tuple[Pairs, dict]:
    """The fold's test queries with their relevant passages that the index holds, and what was left out (a judged
    passage missing from the collection, a query with none left)."""
    judged = trec.read_qrels(qrels)
    test = evaluated_qids(judged, folds.rotation(folds.read_folds(folds_path), fold)["test"])
    wanted = {qid: trec.relevant(judged, qid) for qid in test}
    rows = index_rows(index, {doc for docs in wanted.values() for doc in docs})
    pairs = {qid: [doc for doc in docs if doc in rows] for qid, docs in wanted.items()}
    left_out = {"queries": sorted(qid for qid, docs in pairs.items() if not docs),
                "positives_not_indexed": sum(len(docs) for docs in wanted.values()) - sum(map(len, pairs.values()))}
    return {qid: docs for qid, docs in pairs.items() if docs}, left_out


def passages_of(pairs: Pairs) -> list[str]:
    """The distinct passages of the pairs, sorted: what uniformity is over."""
    return sorted({doc for docs in pairs.values() for doc in docs})


def representation_geometry(spec: dict, search: dict, index: str, queries: str, qrels: str, folds_path: str,
                            fold: str, threads: int, output: str, trained: str | None = None) -> dict:
    """The ``dense_geometry`` rules: alignment and uniformity of the retriever ``spec`` (trained in ``trained``, or
    the backbone's [CLS] as it comes) on the fold's test queries and their relevant passages, the passages' vectors
    from its ``index``; written to ``output`` with every pair's distance. Returns the means, which the log shows."""
    pairs, left_out = positive_pairs(index, qrels, folds_path, fold)
    passages = passages_of(pairs)
    stored = indexed_vectors(index, index_rows(index, set(passages)))
    model = retriever(spec, search, threads, trained)
    topics = trec.read_topics(queries, set(pairs))
    qids = sorted(pairs)
    encoded = dict(zip(qids, encode_all(model, [topics[qid] for qid in qids], QUERY, search["batch_size"])))
    found = geometry(encoded, stored, pairs)
    write_json(output, {"checkpoint": trained or spec["backbone"], "index": index, "fold": fold, "t": T,
                        "measures": {ALIGNMENT: "mean over queries of the mean over a query's relevant passages of "
                                                "||q - p||^2, L2-normalised [CLS] vectors",
                                     UNIFORMITY: f"log mean over distinct pairs of the passages of "
                                                 f"exp(-{T:g} ||x - y||^2), L2-normalised"},
                        "mean": found["mean"], "queries": len(qids), "passages": passages, "left_out": left_out,
                        "per_query": found["per_query"], "distances": found["distances"],
                        "execution": model.execution.used()})
    return {**found["mean"], "queries": len(qids), "passages": len(passages), "left_out": left_out}


def recomputed(stored: dict, index: str, qrels: str, folds_path: str, fold: str) -> dict:
    """What a geometry file should hold, recomputed without a model: its pairs from the qrels, folds and index, its
    uniformity from the index's vectors of their passages, its alignments from its own pair distances (the query
    vectors are not kept: re-encoding is the rule's job). ValueError when its pairs are not those."""
    pairs, _ = positive_pairs(index, qrels, folds_path, fold)
    paired = {qid: sorted(found) for qid, found in stored["distances"].items()}
    if paired != {qid: sorted(docs) for qid, docs in pairs.items()} or stored["passages"] != passages_of(pairs):
        raise ValueError("its query-passage pairs are not the fold's test queries and their indexed relevant passages")
    passages = indexed_vectors(index, index_rows(index, set(stored["passages"])))
    return summary(stored["distances"], uniformity(np.stack([passages[doc] for doc in stored["passages"]])))

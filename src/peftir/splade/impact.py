"""SPLADE vectors as Anserini reads them, the exact scorer that checks Anserini, and R-FLOPS.

As the released ``create_anserini.py`` (REFERENCE ``reference/splade-adapters.md``): a weight becomes the
integer ``round(w × factor)`` (factor 100 for documents and queries), entries ≤ 0 are dropped; a document is a
``JsonVectorCollection`` line ``{"id", "contents", "vector": {piece: impact}}`` (an empty one gets
``{"[unused993]": 1}``, so Anserini still indexes it); a query is its pieces, each repeated as often as its
integer weight, searched with ``-impact -pretokenized``, so a document's score is the integer dot product of
the quantised vectors. ``exact_run`` computes that product in memory (scipy sparse matrices) for a small
collection: Anserini's scores must equal it.

R-FLOPS (Paria et al.; the released ``flops.py``): Σ_j p_j(q)·p_j(d), with p_j(d) the share of the indexed
documents whose vector has piece j (the index's document frequency over its size) and p_j(q) the share of
the queries whose vector has it; equally, the mean over queries of Σ_{j in q} p_j(d) (``query_flops``), which
is how a table averages it over a fold's test queries.
"""
from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Iterable, Iterator

import numpy as np
from scipy import sparse

from ..files import atomic_write

EMPTY_DOCUMENT = {"[unused993]": 1}
MAX_QUERY_PIECES = 1024        # Lucene's maxClauseCount: a query of more distinct pieces fails in Anserini
Impacts = dict[str, int]


def quantised(weights: np.ndarray, vocabulary: list[str], factor: int) -> Impacts:
    """A vector's entries as integer impacts (``round(w × factor)``), those ≤ 0 dropped."""
    impacts = np.rint(weights * factor).astype(np.int64)
    return {vocabulary[j]: int(impacts[j]) for j in np.flatnonzero(impacts > 0)}


def top_pieces(impacts: Impacts, limit: int = MAX_QUERY_PIECES) -> Impacts:
    """A query's ``limit`` heaviest pieces (ties by piece): a trained SPLADE query has tens, an untrained or weakly
    regularised one can have thousands, more than Lucene scores in one query."""
    if len(impacts) <= limit:
        return impacts
    return dict(sorted(impacts.items(), key=lambda item: (-item[1], item[0]))[:limit])


def query_text(impacts: Impacts) -> str:
    """A query for ``-impact -pretokenized``: each piece repeated as often as its impact (pieces sorted, so the
    text is the same however the vector was built)."""
    return " ".join(" ".join([piece] * count) for piece, count in sorted(impacts.items()))


def write_documents(path: str | Path, documents: Iterable[tuple[str, Impacts]]) -> dict:
    """The documents as a JsonVectorCollection file (atomically); returns their count and how many were empty."""
    count = empty = 0
    with atomic_write(path) as stream:
        for doc_id, impacts in documents:
            empty += not impacts
            stream.write(json.dumps({"id": doc_id, "contents": "", "vector": impacts or EMPTY_DOCUMENT}) + "\n")
            count += 1
    return {"documents": count, "empty_documents": empty}


def read_documents(path: str | Path) -> Iterator[tuple[str, Impacts]]:
    """A JsonVectorCollection file's documents, as ``write_documents`` wrote them."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                document = json.loads(line)
                yield document["id"], document["vector"]
            except (ValueError, KeyError) as problem:
                raise ValueError(f"{path}:{number}: not a JsonVectorCollection line ({problem})") from None


def document_frequencies(documents: Iterable[Impacts]) -> tuple[dict[str, int], int]:
    """Each piece's number of documents with an impact, and the number of documents (the index's statistics)."""
    frequencies: dict[str, int] = {}
    count = 0
    for impacts in documents:
        count += 1
        for piece in impacts:
            frequencies[piece] = frequencies.get(piece, 0) + 1
    return frequencies, count


def query_flops(query: Impacts, frequencies: dict[str, int], documents: int) -> float:
    """Σ_{j in q} p_j(d): the pieces a document shares with the query, in expectation over the indexed documents."""
    if not documents:
        raise ValueError("FLOPS needs at least one indexed document")
    return sum(frequencies.get(piece, 0) for piece in query) / documents


def r_flops(queries: Iterable[Impacts], frequencies: dict[str, int], documents: int) -> float:
    """Σ_j p_j(q)·p_j(d), the released code's R-FLOPS: the expected number of pieces a query and a document share,
    i.e. postings touched per document scored; the mean of the queries' ``query_flops``."""
    per_query = [query_flops(query, frequencies, documents) for query in queries]
    if not per_query:
        raise ValueError("R-FLOPS needs at least one query")
    return fmean(per_query)


def _matrix(vectors: list[Impacts], columns: dict[str, int]) -> sparse.csr_matrix:
    rows, cols, values = [], [], []
    for row, impacts in enumerate(vectors):
        for piece, impact in impacts.items():
            if piece in columns:
                rows.append(row)
                cols.append(columns[piece])
                values.append(impact)
    return sparse.csr_matrix((values, (rows, cols)), shape=(len(vectors), len(columns)), dtype=np.int64)


def exact_run(queries: dict[str, Impacts], documents: list[tuple[str, Impacts]],
              depth: int) -> dict[str, dict[str, float]]:
    """Every query's top ``depth`` documents by the integer dot product of the quantised vectors (what Anserini's
    impact search computes), scores > 0 only, ties broken by document id as Anserini does."""
    pieces = sorted({piece for _, impacts in documents for piece in impacts})
    columns = {piece: j for j, piece in enumerate(pieces)}
    doc_ids = [doc_id for doc_id, _ in documents]
    scores = (_matrix(list(queries.values()), columns) @ _matrix([d for _, d in documents], columns).T).toarray()
    run = {}
    for row, qid in enumerate(queries):
        hits = sorted(((-int(s), doc_ids[j]) for j, s in enumerate(scores[row]) if s > 0))[:depth]
        run[qid] = {doc: float(-negative) for negative, doc in hits}
    return run

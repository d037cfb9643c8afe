"""Full-corpus dense search with faiss: an index of a corpus's vectors, written once, searched by every query set.

The index directory has pyserini's layout (``index``: the faiss index; ``docid``: one document id per line, in
index order), so pyserini's ``FaissSearcher`` could read it too. ``flat`` is exact inner-product search
(``IndexFlatIP``, the papers' and Tevatron's); ``hnsw`` is an approximate graph index for large corpora
(``IndexHNSWFlat`` with inner product, ``m`` links per node), whose loss against exact search
``recall_against_exact`` measures on the same queries.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import atomic_directory

KINDS = ("flat", "hnsw")
Hits = dict[str, float]


@dataclass
class DenseIndex:
    index: object            # a faiss index
    ids: list[str]

    def search(self, queries: np.ndarray, depth: int) -> list[Hits]:
        """The ``depth`` best documents of each query row by inner product, best first (HNSW explores at least
        ``depth`` candidates: with fewer it would return fewer good ones)."""
        import faiss

        depth = min(depth, len(self.ids))
        params = None
        if isinstance(self.index, faiss.IndexHNSW):
            params = faiss.SearchParametersHNSW(efSearch=max(self.index.hnsw.efSearch, depth))
        scores, rows = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), depth, params=params)
        return [{self.ids[row]: float(score) for score, row in zip(line_scores, line_rows) if row >= 0}
                for line_scores, line_rows in zip(scores, rows)]

    def exact(self) -> DenseIndex:
        """The same vectors in an exact inner-product index (itself when it is one)."""
        import faiss

        if isinstance(self.index, faiss.IndexFlatIP):
            return self
        flat = faiss.IndexFlatIP(self.index.d)
        flat.add(self.index.reconstruct_n(0, self.index.ntotal))
        return DenseIndex(flat, self.ids)


def build(vectors: np.ndarray, ids: list[str], kind: str = "flat", hnsw_m: int = 32,
          ef_search: int = 128) -> DenseIndex:
    """An index of ``vectors`` (one row per document of ``ids``)."""
    import faiss

    if len(vectors) != len(ids):
        raise ValueError(f"{len(vectors)} vectors for {len(ids)} document ids")
    if kind not in KINDS:
        raise ValueError(f"index kind {kind!r}: one of {', '.join(KINDS)}")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if kind == "flat":
        index = faiss.IndexFlatIP(vectors.shape[1])
    else:
        index = faiss.IndexHNSWFlat(vectors.shape[1], hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = ef_search
    index.add(vectors)
    return DenseIndex(index, list(ids))


def write(index: DenseIndex, path: str | Path) -> None:
    """The index directory, put in place only once complete."""
    import faiss

    with atomic_directory(path) as partial:
        faiss.write_index(index.index, str(partial / "index"))
        (partial / "docid").write_text("".join(f"{doc}\n" for doc in index.ids), encoding="utf-8")


def read(path: str | Path, threads: int) -> DenseIndex:
    import faiss

    faiss.omp_set_num_threads(threads)
    index = faiss.read_index(str(Path(path, "index")))
    ids = Path(path, "docid").read_text(encoding="utf-8").splitlines()
    if len(ids) != index.ntotal:
        raise ValueError(f"{path}: {index.ntotal} vectors but {len(ids)} lines in docid")
    return DenseIndex(index, ids)


def recall_against_exact(found: list[Hits], exact: list[Hits]) -> float:
    """The share of the exact top documents an approximate search also returned (mean over queries)."""
    shares = [len(set(a) & set(e)) / len(e) for a, e in zip(found, exact, strict=True) if e]
    return float(np.mean(shares)) if shares else 1.0

"""Full-corpus dense search with faiss: a corpus's vectors written in shards as they are encoded, searched from disk.

An index directory holds ``docid`` (one document id per line, in vector order), ``shards/00000.npy`` … (the
vectors, float32, one file per encoding window) and ``index.json`` (its kind, dimension and size). ``flat`` is
exact inner-product search (the papers' and Tevatron's ``IndexFlatIP``): each shard is read in turn, searched with
``faiss.knn`` and the shards' top documents merged with ``faiss.ResultHeap``, so a search holds one shard
(MS MARCO's 8.8 M passages × 1,024 dimensions are 36 GB; a shard of 100,000 is 0.4 GB), as Tevatron searches its
encoding shards. ``hnsw`` is an approximate graph index for large corpora (``IndexHNSWFlat`` with inner product,
``m`` links per node), built from the shards into ``index``; it holds every vector in memory, so it is for corpora
that fit, and ``recall_against_exact`` measures its loss against the flat search of the same vectors.

Where the job's execution is a GPU, exact search runs there (what faiss-gpu's flat index does; faiss-gpu is not on
PyPI): the shards are copied to the device once and kept while its memory holds them (MS MARCO's 36 GB fit on an
80 GB GPU), every query block is scored against them with one fp32 product a shard, TF32 off whatever the process
set (``seam.exact_products``: faiss-gpu's flat index computes in fp32 too), and the top documents merged on the
device; on a CPU, ``faiss.knn`` over memory-mapped shards.

Ties: the writer ranks equal scores as trec_eval does (``trec.ranked``), but which of several documents tied at the
``depth``-th score are returned at all is the search's choice (``faiss.knn``'s heap, ``torch.topk``), not the
evaluator's order. Distinct passages rarely give bit-equal inner products; duplicated texts (MS MARCO has some) do.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

from ..execution.seam import CPU, Execution, exact_products
from .. import progress_log
from ..files import atomic_directory

KINDS = ("flat", "hnsw")
SHARDS, HNSW, ABOUT, IDS = "shards", "index", "index.json", "docid"
Hits = dict[str, float]


@dataclass
class DenseIndex:
    """An index directory opened for search: its document ids, its shards and, for ``hnsw``, the graph."""

    ids: list[str]
    shards: list[Path]
    graph: object = field(default=None)      # a faiss IndexHNSWFlat, or None for exact search
    execution: Execution = CPU               # where exact search runs
    resident: dict[Path, torch.Tensor] = field(default_factory=dict, repr=False)   # shards kept on the device

    def search(self, queries: np.ndarray, depth: int) -> list[Hits]:
        """The ``depth`` best documents of each query row by inner product, best first (HNSW explores at least
        ``depth`` candidates: with fewer it would return fewer good ones)."""
        import faiss

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        depth = min(depth, len(self.ids))
        if self.graph is not None:
            params = faiss.SearchParametersHNSW(efSearch=max(self.graph.hnsw.efSearch, depth))
            scores, rows = self.graph.search(queries, depth, params=params)
        elif self.execution.device.type != "cpu":
            scores, rows = self.on_device(queries, depth)
        else:
            heap, offset = faiss.ResultHeap(len(queries), depth, keep_max=True), 0
            for shard in self.shards:
                vectors = np.load(shard, mmap_mode="r")
                found, where = faiss.knn(queries, vectors, min(depth, len(vectors)), metric=faiss.METRIC_INNER_PRODUCT)
                heap.add_result(found, np.where(where >= 0, where + offset, -1))
                offset += len(vectors)
            heap.finalize()
            scores, rows = heap.D, heap.I
        return [{self.ids[row]: float(score) for score, row in zip(line_scores, line_rows) if row >= 0}
                for line_scores, line_rows in zip(scores, rows)]

    def on_device(self, queries: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact search on the execution's device: each shard's fp32 inner products with the queries (TF32 off),
        its top ``depth`` merged with the best so far; the scores and rows as ``faiss.knn`` returns them."""
        device = self.execution.device
        found = self.execution.inputs(torch.from_numpy(queries))
        best = torch.empty((len(queries), 0), device=device)
        rows = torch.empty((len(queries), 0), dtype=torch.long, device=device)
        offset = 0
        with torch.inference_mode(), exact_products():
            for shard in self.shards:
                vectors = self._vectors(shard)
                top = (found @ vectors.T).topk(min(depth, len(vectors)), dim=1)
                best, order = torch.cat([best, top.values], dim=1).topk(min(depth, best.shape[1] + len(vectors)),
                                                                          dim=1)
                rows = torch.cat([rows, top.indices + offset], dim=1).gather(1, order)
                offset += len(vectors)
        return best.cpu().numpy(), rows.cpu().numpy()

    def _vectors(self, shard: Path) -> torch.Tensor:
        """A shard's vectors on the device, kept there while the device has twice their size free."""
        if shard in self.resident:
            return self.resident[shard]
        vectors = self.execution.inputs(torch.from_numpy(np.load(shard)))
        if self.execution.device.type == "cuda" and torch.cuda.mem_get_info(self.execution.device)[0] > \
                2 * vectors.numel() * vectors.element_size():
            self.resident[shard] = vectors
        return vectors

    def exact(self) -> DenseIndex:
        """The same vectors searched exactly (itself when it is flat)."""
        return self if self.graph is None else DenseIndex(self.ids, self.shards, execution=self.execution,
                                                          resident=self.resident)


def write(path: str | Path, batches: Iterable[tuple[np.ndarray, list[str]]], kind: str = "flat", hnsw_m: int = 32,
          ef_search: int = 128) -> dict:
    """The index directory of the vectors and ids in ``batches`` (each batch one shard, written as it comes), put in
    place only once complete; its facts (documents, dimension, shards)."""
    import faiss

    if kind not in KINDS:
        raise ValueError(f"index kind {kind!r}: one of {', '.join(KINDS)}")
    with atomic_directory(path) as building:
        (building / SHARDS).mkdir()
        count, dimension, shards = 0, None, 0
        with open(building / IDS, "w", encoding="utf-8") as docids:
            for vectors, ids in batches:
                if len(vectors) != len(ids):
                    raise ValueError(f"{len(vectors)} vectors for {len(ids)} document ids")
                np.save(building / SHARDS / f"{shards:05d}.npy", np.ascontiguousarray(vectors, dtype=np.float32))
                docids.write("".join(f"{doc}\n" for doc in ids))
                count, dimension, shards = count + len(ids), vectors.shape[1], shards + 1
                progress_log.advance("vectors written to the index", len(ids))
        progress_log.finish("vectors written to the index")
        if kind == "hnsw":
            graph = faiss.IndexHNSWFlat(dimension, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efSearch = ef_search
            progress_log.start("building the HNSW graph", shards, "shards")
            for shard in sorted((building / SHARDS).iterdir()):
                graph.add(np.load(shard))
                progress_log.advance("building the HNSW graph")
            progress_log.finish("building the HNSW graph")
            faiss.write_index(graph, str(building / HNSW))
        facts = {"kind": kind, "documents": count, "dimension": dimension, "shards": shards}
        (building / ABOUT).write_text(json.dumps(facts))
    return facts


def read(path: str | Path, threads: int, execution: Execution = CPU) -> DenseIndex:
    """The index directory at ``path`` opened for search, exact search running where ``execution`` says (faiss on
    ``threads`` CPU threads otherwise)."""
    import faiss

    faiss.omp_set_num_threads(threads)
    path = Path(path)
    about = json.loads((path / ABOUT).read_text())
    ids = (path / IDS).read_text(encoding="utf-8").splitlines()
    if len(ids) != about["documents"]:
        raise ValueError(f"{path}: {about['documents']} vectors but {len(ids)} lines in {IDS}")
    graph = faiss.read_index(str(path / HNSW)) if about["kind"] == "hnsw" else None
    return DenseIndex(ids, sorted((path / SHARDS).iterdir()), graph, execution)


def overlaps(found: list[Hits], exact: list[Hits]) -> list[float]:
    """Per query with exact hits, the share of the exact top documents an approximate search also returned."""
    return [len(set(a) & set(e)) / len(e) for a, e in zip(found, exact, strict=True) if e]


def recall_against_exact(found: list[Hits], exact: list[Hits]) -> float:
    """The share of the exact top documents an approximate search also returned (mean over queries)."""
    return mean_overlap(overlaps(found, exact))


def mean_overlap(shares: list[float]) -> float:
    """The mean of per-query ``overlaps`` (1.0 when no query had exact hits)."""
    return float(np.mean(shares)) if shares else 1.0

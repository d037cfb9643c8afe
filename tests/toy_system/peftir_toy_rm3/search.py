"""BM25 with RM3 query expansion on the core's Anserini index of a collection (which stores document vectors)."""
from __future__ import annotations

from peftir.provenance.ir_metadata import ir_metadata, write_ir_metadata
from peftir.retrieval.anserini import ranked, searched_queries


def rm3_search(index: str, queries: str, folds: str, run: str, metadata: str, settings: dict, dataset: str,
               threads: int) -> None:
    """The ``toy_rm3_search`` rule: every query of the collection ranked by BM25 (``settings``: k1, b) after RM3's
    expansion (fb_terms terms of the fb_docs top documents, the original query weighted original_query_weight), to
    ``depth`` documents, as a TREC run tagged ``rm3``, with its ir_metadata."""
    scoring = ["-bm25", "-bm25.k1", str(settings["k1"]), "-bm25.b", str(settings["b"]), "-rm3",
               "-rm3.fbTerms", str(settings["fb_terms"]), "-rm3.fbDocs", str(settings["fb_docs"]),
               "-rm3.originalQueryWeight", str(settings["original_query_weight"])]
    ranked(index, [searched_queries(queries, folds, None)], run, scoring, "rm3", settings["depth"], threads)
    write_ir_metadata(metadata, ir_metadata(
        "rm3", {"retrieval": "BM25 + RM3 (Anserini, Lucene analyzer)", **settings}, {"name": dataset}))

"""A SPLADE retriever over a whole corpus with Anserini: documents encoded once into an impact index, queries
searched against it, R-FLOPS measured on what was indexed and searched.

``index_corpus`` encodes the collection in batches of similar length (a batch pads to its own longest text),
quantises each batch's vectors and writes them at once (neither a collection's |V|-wide vectors nor their
quantised pieces are held: a barely trained encoder's documents have nearly every piece of the vocabulary),
then indexes the JsonVectorCollection with ``-impact -pretokenized``; both stay in the output directory, the
vectors for R-FLOPS and the exact cross-check. ``search_queries`` encodes and quantises the queries, searches
the index and writes a TREC run with its ir_metadata, and returns R-FLOPS with the queries' and documents'
mean number of pieces. A query of more than Lucene's 1,024 distinct pieces keeps its heaviest 1,024 (an
untrained or weakly regularised encoder's; how many were cut is in the metadata).
"""
from __future__ import annotations

import time
from pathlib import Path
from statistics import fmean
from typing import Iterator

import torch

from ..data import trec
from .. import progress_log
from ..data.docstore import document_windows
from ..data.empty_documents import is_empty
from ..execution.passes import Configured, Encoder, Shape
from ..execution.seam import Execution
from ..files import atomic_directory, write_json
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from ..retrieval import anserini
from ..retrieval.dense_retriever import length_batches
from . import impact
from .encoder import DOCUMENT, QUERY, Splade

VECTORS, LUCENE = "vectors", "lucene"      # an index directory's parts


def quantised_batches(encoder: Splade, texts: list[str], role: str, factor: int,
                      batch_size: Configured) -> Iterator[tuple[int, impact.Impacts]]:
    """(position in ``texts``, quantised SPLADE vector) for every text, encoded in batches of similar token
    length and yielded batch by batch, so no more than one batch's |V|-wide vectors is ever held. The forward pass
    holds the batch's logits, batch × length × |V| floats (0.5 GB for 32 texts of 128 pieces at BERT's |V|),
    which the pooling then works on in place; how many texts a batch holds is the execution's decision for
    ``batch_size`` (``auto`` or a number; recorded as ``encode``)."""
    vocabulary = encoder.vocabulary()
    batch_size = encoder.execution.rows_per_pass("encode", batch_size, len(texts),
                                                 Encoder.of(encoder.model.config, encoder),
                                                 Shape(encoder.max_len[role], False, heads=1))
    with torch.no_grad():
        for chosen in length_batches(encoder.tokenizer, texts, encoder.max_len[role], batch_size):
            weights = encoder.encode([texts[i] for i in chosen], role).float().cpu().numpy()
            for row, index in enumerate(chosen):
                yield int(index), impact.quantised(weights[row], vocabulary, factor)


def quantised_vectors(encoder: Splade, texts: list[str], role: str, factor: int,
                      batch_size: Configured) -> list[impact.Impacts]:
    """Each text's quantised SPLADE vector, in the texts' order (for query sets: they are held whole)."""
    vectors: list[impact.Impacts] = [{} for _ in texts]
    for index, impacts in quantised_batches(encoder, texts, role, factor, batch_size):
        vectors[index] = impacts
    return vectors


def index_corpus(encoder: Splade, docs: str, output: str | Path, factor: int, batch_size: Configured,
                 threads: int) -> dict:
    """The ``splade_index`` rule: the corpus's quantised vectors, a window of documents at a time, written as they
    are encoded, and their Anserini impact index in ``output`` (``vectors/``, ``lucene/``); returns the facts
    (sizes, mean pieces per document, seconds) the log shows."""
    started = time.monotonic()
    pieces = empty_texts = 0

    def documents() -> Iterator[tuple[str, impact.Impacts]]:
        nonlocal pieces, empty_texts
        progress_log.start("encoding the corpus", progress_log.lines_of(docs), "documents")
        for ids, texts in document_windows(docs):
            empty_texts += sum(map(is_empty, texts))      # encoded all the same, from the special tokens alone
            for index, impacts in quantised_batches(encoder, texts, DOCUMENT, factor, batch_size):
                pieces += len(impacts)
                yield ids[index], impacts
            progress_log.advance("encoding the corpus", len(ids))
        progress_log.finish("encoding the corpus")

    output = Path(output)
    written = impact.write_documents(output / VECTORS / "docs.jsonl", documents())
    encoded = time.monotonic()
    # an empty vector is written as the released code's placeholder piece, so Anserini counts no document empty
    indexed = anserini.build_index(output / VECTORS, output / LUCENE, threads, written["documents"],
                                   kind=anserini.IMPACT_INDEX,
                                   about={"empty_texts": empty_texts, "empty_vectors": written["empty_documents"]})
    return {**written, "empty_texts": empty_texts, "anserini": indexed["anserini"],
            "mean_document_pieces": pieces / max(1, written["documents"]),
            "index_bytes": sum(f.stat().st_size for f in (output / LUCENE).rglob("*") if f.is_file()),
            "encoding_seconds": round(encoded - started, 1), "indexing_seconds": round(time.monotonic() - encoded, 1)}


def search_queries(encoder: Splade, index: str | Path, queries: str, factor: int, depth: int, batch_size: Configured,
                   threads: int, about: dict, run: str, metadata: str, flops: str) -> dict:
    """The ``splade_search`` rule: every query's top ``depth`` documents from the impact index as a TREC run with
    its ir_metadata, and each query's FLOPS against the indexed documents (``impact.query_flops``) in ``flops``;
    returns R-FLOPS over the searched queries (their mean), the mean pieces per query and the seconds spent encoding
    and searching. Queries are encoded and searched ``trec.QUERY_BLOCK`` at a time (``anserini.impact_search``)."""
    topics = trec.read_topics(queries)
    qids = sorted(topics)
    indexed = impact.read_documents(Path(index) / VECTORS / "docs.jsonl")
    frequencies, documents = impact.document_frequencies(vector for _, vector in indexed)
    per_query, counts = {}, {"pieces": 0, "cut": 0, "empty": 0}

    def blocks() -> Iterator[dict[str, str]]:
        progress_log.start("searching the queries", len(qids), "queries")
        for block in trec.query_blocks(qids):
            texts = {}
            for qid, vector in zip(block, quantised_vectors(encoder, [topics[q] for q in block], QUERY, factor,
                                                            batch_size)):
                counts["cut"] += len(vector) > impact.MAX_QUERY_PIECES
                vector = impact.top_pieces(vector)
                counts["pieces"] += len(vector)
                counts["empty"] += not vector
                per_query[qid] = impact.query_flops(vector, frequencies, documents)
                if vector:                           # a query with no piece left retrieves nothing
                    texts[qid] = impact.query_text(vector)
            progress_log.advance("searching the queries", len(block))
            yield texts
        progress_log.finish("searching the queries")

    tag = "-".join(str(about[key]) for key in ("backbone", "splade", "fold", "seed") if key in about)
    started = time.monotonic()
    anserini.impact_search(Path(index) / LUCENE, blocks(), run, tag, depth, threads)
    seconds = time.monotonic() - started
    facts = {"queries": len(qids), "empty_queries": counts["empty"], "queries_cut_to_max_pieces": counts["cut"],
             "documents": documents, "depth": depth, "quantisation": factor, "r_flops": fmean(per_query.values()),
             "mean_query_pieces": counts["pieces"] / len(qids)}
    write_json(flops, {"r_flops": facts["r_flops"], "documents": documents, "per_query": per_query})
    write_ir_metadata(metadata, ir_metadata(tag, {"retrieval": "SPLADE, impact index (Anserini -impact -pretokenized)",
                                                  **facts, "execution": encoder.execution.used(), **about},
                                            {"name": about.get("target", about["dataset"])}))
    return {**facts, "encoding_and_search_seconds": round(seconds, 2)}


def trained_encoder(spec: dict, model: str, backbone: str | None, threads: int) -> Splade:
    """The retriever ``spec`` (the ``splade`` param) with its learned weights ``model``, placed as its execution
    says (the index, the search and the audit's rescoring load it alike)."""
    from .train import load_splade

    return load_splade(backbone or spec["backbone"], spec["layers"], spec["method"], spec["train"], model,
                       Execution.of(spec["execution"], threads))


def index_trained(spec: dict, settings: dict, docs: str, threads: int, output: str, model: str,
                  backbone: str | None = None) -> dict:
    """The ``splade_index`` rule: ``index_corpus`` with the trained retriever ``model`` (the ``splade`` param
    ``spec`` says how it was built; ``settings``: the ``splade_index`` param)."""
    with atomic_directory(output) as building:       # an interrupted job leaves no index that looks complete
        return index_corpus(trained_encoder(spec, model, backbone, threads), docs, building,
                            settings["quantisation"], settings["batch_size"], threads)


def search_trained(spec: dict, settings: dict, index: str, queries: str, threads: int, about: dict, run: str,
                   metadata: str, flops: str, model: str, backbone: str | None = None) -> dict:
    """The ``splade_search`` rule: ``search_queries`` with the trained retriever ``model``."""
    return search_queries(trained_encoder(spec, model, backbone, threads), index, queries, settings["quantisation"],
                          settings["depth"], settings["batch_size"], threads, about, run, metadata, flops)

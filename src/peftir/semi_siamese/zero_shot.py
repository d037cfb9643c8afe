"""The untrained backbone as a reranker: the reference row that shows what fine-tuning adds.

The backbone the rankers start from (cut to the same ``backbone.layers``) encodes queries and
candidate documents as a sentence encoder, through sentence-transformers: the model's own pooling
(mean over the tokens for the embedded MiniLM, which was trained that way; a plain BERT gets mean
pooling) and its similarity (cosine). Queries and documents are cut to the rankers' length limits
(``max_query_len``, ``max_doc_len``, at most ``max_seq_len`` with the special tokens), so the row sees
what the rankers see. It reranks the BM25 candidates of every test query once; each fold's test
queries are then evaluated like BM25's reference row.
"""
from __future__ import annotations

import torch

from ..data import folds
from .. import progress_log
from ..data.trec import Run, answered_queries, read_run, read_topics, report_missing, write_run
from ..execution.seam import Execution
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from ..retrieval.sentence_encoder import embed, sentence_encoder
from ..models.inputs import Collection
from .rerank import GROUP_PAIRS, progress, query_groups


def encoder(backbone: dict, execution: Execution):
    """The backbone as a sentence-transformers model, with its lowest ``layers`` layers, placed by ``execution``."""
    layers = {"num_hidden_layers": backbone["layers"]} if backbone["layers"] else None
    return sentence_encoder(backbone["name"], execution, layers)


@torch.inference_mode()
def zero_shot_scores(model, collection: Collection, candidates: str, qids: list[str], settings: dict,
                     reranking: dict) -> Run:
    """Cosine of the untrained encodings of each query and its top-``depth`` BM25 candidates."""
    run = read_run(candidates, qids, reranking["depth"])
    topics = read_topics(collection.queries, qids)
    qids = [qid for qid in qids if run.get(qid)]
    scored: Run = {}
    progress_log.start("zero-shot candidates", sum(len(run[qid]) for qid in qids), "candidates")
    with collection.store() as store, progress(sum(len(run[qid]) for qid in qids), "zero-shot candidates") as bar:
        for group in query_groups(qids, run, GROUP_PAIRS):
            docids = sorted({docid for qid in group for docid in run[qid]})
            texts = store.texts(docids)
            docs = dict(zip(docids, embed(model, [texts[d] for d in docids], reranking["batch_size"],
                                          min(settings["max_doc_len"] + 2, settings["max_seq_len"]))))
            queries = embed(model, [topics[qid] for qid in group], reranking["batch_size"],
                            settings["max_query_len"] + 2)
            for qid, query in zip(group, queries):
                ranked = list(run[qid])
                similarity = model.similarity(query.unsqueeze(0), torch.stack([docs[d] for d in ranked]))[0]
                scored[qid] = dict(zip(ranked, similarity.tolist()))
                bar.update(len(ranked))
                progress_log.advance("zero-shot candidates", len(ranked))
    progress_log.finish("zero-shot candidates")
    return scored


def rerank_zero_shot(collection: Collection, candidates: str, dataset: str, backbone: dict, lengths: dict,
                     reranking: dict, execution: dict, threads: int, output: str, metadata: str) -> None:
    """The ``zero_shot`` rule: the untrained backbone reranks every test query's BM25 candidates, cut to the
    rankers' ``lengths`` (``max_query_len``, ``max_doc_len``, ``max_seq_len``)."""
    qids = folds.test_queries(folds.read_folds(collection.folds))
    run = zero_shot_scores(encoder(backbone, Execution.of(execution, threads)), collection, candidates, qids, lengths, reranking)
    report_missing(answered_queries(run), qids, output)
    write_run(output, run, tag="backbone-zero-shot")
    about = {"retrieval": f"BM25 top-{reranking['depth']}, reranked by the untrained backbone (sentence-"
                          f"transformers pooling, cosine)", "backbone": backbone,
             "lengths": lengths}
    write_ir_metadata(metadata, ir_metadata("backbone-zero-shot", about, {"name": dataset,
                                                                          "queries": "every fold's test queries"}))

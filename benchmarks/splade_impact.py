"""SPLADE impact search on vaswani with Anserini against BM25: index size, query time, R-FLOPS, exact agreement.

    .venv/bin/snakemake --cores 2 results/index/vaswani results/pretrained/base/mlm-head   # (once)
    .venv/bin/python benchmarks/splade_impact.py [--threads 2] [--logit-offset -6]

Encodes the 11,429 documents with the embedded MiniLM (its MLM head fitted by the ``pretraining_mlm_head`` rule)
as an untrained mono-adapter SPLADE encoder (``peftir.splade``), its logits offset by ``--logit-offset``
(``peftir.splade.encoder.offset_logits``): that head's logits are centred on 0 and would make every vector nearly
the whole vocabulary, while a trained SPLADE's documents have tens to hundreds of pieces; the offset puts the
vectors in that range. This measures the engine, not retrieval quality (MRR@10 is printed only to show what was
searched). Builds the Anserini impact index (``-impact -pretokenized``), searches the 93 queries to depth 1,000,
compares with BM25 on the pipeline's own Lucene index of the same documents (same JVM start-up cost in both wall
times), and checks Anserini's scores against the exact in-memory scorer.
Writes ``results/benchmarks/splade-impact.json``.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from peftir.data import trec
from peftir.evaluation.metrics import evaluate_run
from peftir.execution.seam import Execution
from peftir.retrieval import anserini
from peftir.splade import impact
from peftir.splade.encoder import QUERY
from peftir.splade.search import VECTORS, index_corpus, quantised_vectors, search_queries
from peftir.splade.train import build_splade

DATA = Path("results/data/vaswani")
BM25_INDEX = Path("results/index/vaswani")
BACKBONE = "pretrained:base/mlm-head"
OUT = Path("results/benchmarks/splade-impact.json")
WORK = Path("results/benchmarks/splade-impact")
BATCH = 32            # texts per forward pass: its logits are BATCH × length × |V| floats (0.5 GB at 128 pieces)


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def mean_rr10(run_path: Path, qrels: trec.Qrels) -> float:
    per_query = evaluate_run(trec.read_run(run_path), qrels, ["RR@10"])
    return sum(v["RR@10"] for v in per_query.values()) / len(per_query)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--logit-offset", type=float, default=-6.0)
    parser.add_argument("--d-max-len", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    encoder = build_splade(BACKBONE, None, {"name": "adapter", "reduction_factor": 16},
                           {"q_max_len": 32, "d_max_len": args.d_max_len, "logit_offset": args.logit_offset},
                           Execution.of(None, args.threads)).eval()
    indexed = index_corpus(encoder, str(DATA / "corpus" / "docs.jsonl"), WORK, 100, BATCH, args.threads)
    about = {"dataset": "vaswani", "backbone": "minilm-mlm", "splade": "adapter-untrained"}
    searched = search_queries(encoder, WORK, str(DATA / "queries.tsv"), 100, 1000, BATCH, args.threads, about,
                              str(WORK / "splade.run"), str(WORK / "splade.ir_metadata.yaml"),
                              str(WORK / "splade.flops.json"))
    topics = trec.read_topics(DATA / "queries.tsv")
    started = time.monotonic()
    anserini.search(BM25_INDEX, topics, WORK / "bm25.run", 0.9, 0.4, 1000, args.threads)
    bm25_seconds = time.monotonic() - started
    qids = sorted(topics)
    queries = {qid: impact.top_pieces(vector) for qid, vector in
               zip(qids, quantised_vectors(encoder, [topics[q] for q in qids], QUERY, 100, BATCH))}
    exact = impact.exact_run(queries, list(impact.read_documents(WORK / VECTORS / "docs.jsonl")), 1000)
    run = trec.read_run(WORK / "splade.run")
    # equal up to ties at the cut-off and Anserini's float32 output (459 printed as 458.999969): the same score at
    # every rank, the same score for every document in both
    same_scores = all(np.allclose(sorted(run[q].values()), sorted(exact[q].values()), rtol=1e-6, atol=0)
                      and all(math.isclose(run[q][d], exact[q][d], rel_tol=1e-6) for d in set(run[q]) & set(exact[q]))
                      for q in exact if exact[q])
    qrels = trec.read_qrels(DATA / "qrels.txt")
    per10k = 10_000 / indexed["documents"]
    facts = {"documents": indexed["documents"], "queries": len(topics), "threads": args.threads,
             "logit_offset": args.logit_offset, "d_max_len": args.d_max_len,
             "splade": {"mean_document_pieces": round(indexed["mean_document_pieces"], 1),
                        "mean_query_pieces": round(searched["mean_query_pieces"], 1),
                        "r_flops": round(searched["r_flops"], 2),
                        "encoding_seconds_per_10k": round(indexed["encoding_seconds"] * per10k, 1),
                        "indexing_seconds": indexed["indexing_seconds"],
                        "index_bytes_per_10k": round(indexed["index_bytes"] * per10k),
                        "vectors_bytes_per_10k": round(directory_bytes(WORK / VECTORS) * per10k),
                        "search_seconds_93_queries": searched["encoding_and_search_seconds"],
                        "empty_queries": searched["empty_queries"],
                        "scores_equal_exact_scorer": same_scores,
                        "RR@10": round(mean_rr10(WORK / "splade.run", qrels), 4)},
             "bm25": {"index_bytes_per_10k": round(directory_bytes(BM25_INDEX) * per10k),
                      "search_seconds_93_queries": round(bm25_seconds, 2),
                      "RR@10": round(mean_rr10(WORK / "bm25.run", qrels), 4)}}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main()

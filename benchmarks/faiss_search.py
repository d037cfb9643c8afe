"""Full-corpus dense search on vaswani: encoding, faiss index size and search time, HNSW recall against exact.

    .venv/bin/snakemake --cores 2 results/data/vaswani/folds.json    # vaswani exported (once)
    .venv/bin/python benchmarks/faiss_search.py [--threads 2] [--p-max-len 128]

Encodes the 11,429 documents with the embedded backbone as a dense retriever (untrained MiniLM, last-layer
[CLS], ``peftir.retrieval.dense_retriever``, batches sorted by length), builds the exact (``flat``) and an HNSW index
(``peftir.retrieval.faiss_index``), searches the 93 queries to depth 1,000, and reports per 10k documents:
encoding seconds, index bytes, search milliseconds per query, and HNSW's recall@1000 against exact search.
Writes ``results/benchmarks/faiss-search.json``.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from peftir.data import trec
from peftir.dense.train import build_retriever
from peftir.execution.seam import Execution
from peftir.models.inputs import Collection
from peftir.retrieval import faiss_index
from peftir.retrieval.dense_retriever import PASSAGE, QUERY, encode_all

DATA = Path("results/data/vaswani")
OUT = Path("results/benchmarks/faiss-search.json")
BATCH = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--p-max-len", type=int, default=128)
    args = parser.parse_args()
    collection = Collection(queries=str(DATA / "queries.tsv"), qrels=str(DATA / "qrels.txt"),
                            docs=str(DATA / "corpus" / "docs.jsonl"), docs_lookup=str(DATA / "docs.lookup.sqlite"),
                            folds=str(DATA / "folds.json"))
    with open(collection.docs, encoding="utf-8") as lines:
        documents = [json.loads(line) for line in lines]
    topics = trec.read_topics(collection.queries)
    retriever = build_retriever("embedded:all-MiniLM-L6-v2", None, {"name": "ft"},
                                {"q_max_len": 32, "p_max_len": args.p_max_len}, Execution.of(None, args.threads)).eval()
    started = time.monotonic()
    vectors = encode_all(retriever, [doc["contents"] for doc in documents], PASSAGE, BATCH)
    encoding = time.monotonic() - started
    queries = encode_all(retriever, list(topics.values()), QUERY, BATCH)
    per10k = 10_000 / len(documents)
    facts = {"documents": len(documents), "queries": len(topics), "dimension": int(vectors.shape[1]),
             "threads": args.threads, "p_max_len": args.p_max_len,
             "encoding_seconds_per_10k": round(encoding * per10k, 1)}
    found = {}
    with tempfile.TemporaryDirectory() as directory:
        for kind in faiss_index.KINDS:
            started = time.monotonic()
            faiss_index.write(Path(directory) / kind, [(vectors, [doc["id"] for doc in documents])], kind=kind)
            built = time.monotonic() - started
            index = faiss_index.read(Path(directory) / kind, args.threads)
            started = time.monotonic()
            found[kind] = index.search(queries, 1000)
            searched = time.monotonic() - started
            size = sum(f.stat().st_size for f in (Path(directory) / kind).rglob("*") if f.is_file())
            facts[kind] = {"build_seconds": round(built, 3), "index_bytes_per_10k": round(size * per10k),
                           "search_ms_per_query": round(1000 * searched / len(topics), 2)}
    facts["hnsw"]["recall_at_1000_against_exact"] = faiss_index.recall_against_exact(found["hnsw"], found["flat"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main()

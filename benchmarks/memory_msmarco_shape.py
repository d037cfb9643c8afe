"""Peak memory and time of an MS MARCO job's data handling, on a synthetic collection of MS MARCO's shape.

    .venv/bin/python benchmarks/memory_msmarco_shape.py [--scale 1.0] [--before]

Builds, under ``results/benchmarks/msmarco-shape/``, a collection shaped like MS MARCO passage (8.8 M
passages of ~56 words drawn from the backbone's vocabulary, 502,939 training queries, 6,980 dev and
43 test queries, one relevant passage each, a BM25-like run of depth 100 over the dev and test
queries as the pipeline's ``bm25`` writes when training reads triples, and one over every query as
it writes otherwise, 50 M lines) with the pipeline's own export code (documents + lookup), then
measures, each phase in its own process (peak RSS from ``wait4``):

- ``train-data``: what a training job prepares: the splits, the training queries' texts, the triples
  file, one epoch of 16,384 triples fetched from the store and tokenised as the training loop does,
  and the 500-query validation sample's 50,000 candidates fetched, tokenised and kept;
- ``rerank-dev``: the whole dev set's 698,000 candidates, a group of queries at a time, fetched and
  tokenised as ``peftir.semi_siamese.rerank`` does before scoring (the final validation pass);
- ``stream-run``: the dev queries' candidates streamed out of the 50 M-line run;
- ``rerank-dev-scored``: 300 dev queries really reranked by a 1-layer MiniLM TwinBERT (memory of a
  scoring job: model, encodings, groups);
- with ``--before``, what the code before this change did: the whole 50 M-line run read into memory,
  and the texts of every document read from ``docs.jsonl`` into a dict.

``--scale`` shrinks every count (documents, queries, run) for a quicker run; times scale linearly.
Nothing is written outside ``results/``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

ROOT = Path("results/benchmarks/msmarco-shape")
SHAPE = {"docs": 8_841_823, "train": 502_939, "dev": 6_980, "test": 43, "depth": 100, "words": 56}
Doc = namedtuple("Doc", "doc_id text")


class Synthetic:
    """Passages as ir_datasets records, so the pipeline's export writes them (``peftir.data.export``)."""

    def __init__(self, count: int, words: list[str], seed: int = 0) -> None:
        self.count, self.words, self.seed = count, words, seed

    def dataset_id(self) -> str:
        return "synthetic/msmarco-shape"

    def docs_iter(self):
        rng = random.Random(self.seed)
        cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(self.words))))   # Zipf-like
        for index in range(self.count):
            length = max(5, int(rng.gauss(SHAPE["words"], 20)))
            yield Doc(f"p{index}", " ".join(rng.choices(self.words, cum_weights=cumulative, k=length)))


def build(root: Path, scale: float) -> dict:
    """The synthetic collection, its queries, splits, qrels, triples and runs (skipped when already built)."""
    from peftir.contract.backbones import EMBEDDED
    from peftir.data.export import _write_docs
    from peftir.models.backbone import load

    counts = {key: max(1, round(value * scale)) if key in ("docs", "train", "dev") else value
              for key, value in SHAPE.items()}
    done = root / "built.json"
    if done.exists() and json.loads(done.read_text())["counts"] == counts:
        return json.loads(done.read_text())
    root.mkdir(parents=True, exist_ok=True)
    vocab = load(EMBEDDED, 1).tokenizer.get_vocab()
    words = sorted(word for word in vocab if word.isalpha() and len(word) > 2)
    timings = {}
    start = time.time()
    _write_docs(Synthetic(counts["docs"], words), {"doc_fields": ["text"]}, root / "corpus" / "docs.jsonl",
                root / "docs.lookup.sqlite", root / "empty-docs.txt")
    timings["export (documents + lookup)"] = time.time() - start
    rng = random.Random(1)
    splits = {split: [f"{split}{i}" for i in range(counts[split])] for split in ("train", "dev", "test")}
    with open(root / "queries.tsv", "w") as queries, open(root / "qrels.txt", "w") as qrels:
        for qids in splits.values():
            for qid in qids:
                queries.write(f"{qid}\t{' '.join(rng.choices(words, k=rng.randint(3, 10)))}\n")
                qrels.write(f"{qid} 0 p{rng.randrange(counts['docs'])} 1\n")
    (root / "folds.json").write_text(json.dumps({"dataset": "synthetic", "scheme": "presplit",
                                                 "splits": {"train": splits["train"], "valid": splits["dev"],
                                                            "test": splits["test"]}}))
    with open(root / "triples.tsv", "w") as triples:
        for qid in splits["train"]:
            triples.write(f"{qid}\tp{rng.randrange(counts['docs'])}\tp{rng.randrange(counts['docs'])}\n")
    start = time.time()
    for name, qids in (("bm25.run", splits["dev"] + splits["test"]),
                       ("bm25-all-queries.run", splits["train"] + splits["dev"] + splits["test"])):
        with open(root / name, "w") as run:
            for qid in qids:
                for rank in range(1, counts["depth"] + 1):
                    run.write(f"{qid} Q0 p{rng.randrange(counts['docs'])} {rank} {30.0 - rank / 10} bm25\n")
    timings["runs written"] = time.time() - start
    built = {"counts": counts, "timings": timings,
             "sizes_mb": {p.name: round(p.stat().st_size / 2**20) for p in [root / "corpus" / "docs.jsonl",
                                                                           root / "docs.lookup.sqlite",
                                                                           root / "bm25-all-queries.run"]}}
    done.write_text(json.dumps(built, indent=1))
    return built


def _collection(root: Path):
    from peftir.models.inputs import Collection

    return Collection(queries=str(root / "queries.tsv"), qrels=str(root / "qrels.txt"),
                      docs=str(root / "corpus" / "docs.jsonl"), docs_lookup=str(root / "docs.lookup.sqlite"),
                      folds=str(root / "folds.json"))


SETTINGS = {"max_query_len": 20, "max_doc_len": 800, "max_seq_len": 512, "twinbert": {"pooling": "mean"},
            "monobert": {"dropout": 0.1}, "colbert": {"dim": 128}}


def phase_train_data(root: Path) -> dict:
    from peftir.contract.backbones import EMBEDDED
    from peftir.data import folds
    from peftir.models import inputs
    from peftir.models.backbone import load
    from peftir.semi_siamese.configured import ranking_data
    from peftir.semi_siamese.loop import TriplesFile
    from peftir.semi_siamese.rerank import batches
    from peftir.semi_siamese.train_ranker import validation_queries

    tokenizer = load(EMBEDDED, 1).tokenizer
    collection = _collection(root)
    split = folds.rotation(folds.read_folds(collection.folds), "1")
    queries, docs = inputs.texts(collection, split["train"], tokenizer, 20, 800, keep_docs=False)
    triples = TriplesFile(root / "triples.tsv").epoch(1, random.Random(0), 16_384)
    for micro in batches(triples, 2):                     # the paper's micro-batches of 2 pairs
        queries.many([q for q, _, _ in micro])
        docs.many([p for _, p, _ in micro] + [n for _, _, n in micro])
    sample = validation_queries(split["valid"], {"queries": 500, "seed": 42})
    valid = ranking_data(collection, str(root / "bm25.run"), sample, 100, tokenizer, SETTINGS)
    valid.docs.many(sorted({d for qid in sample for d in valid.candidates[qid]}))
    return {"triples": len(triples), "validation candidates": sum(len(c) for c in valid.candidates.values())}


def phase_rerank_dev(root: Path) -> dict:
    from peftir.contract.backbones import EMBEDDED
    from peftir.data import folds
    from peftir.models.backbone import load
    from peftir.semi_siamese.configured import ranking_data
    from peftir.semi_siamese.rerank import GROUP_PAIRS, query_groups

    tokenizer = load(EMBEDDED, 1).tokenizer
    collection = _collection(root)
    dev = folds.rotation(folds.read_folds(collection.folds), "1")["valid"]
    data = ranking_data(collection, str(root / "bm25.run"), dev, 100, tokenizer, SETTINGS, keep_docs=False)
    scored = 0
    for group in query_groups(dev, data.candidates, GROUP_PAIRS):     # as rerank() walks them
        ids = sorted({d for qid in group for d in data.candidates[qid]})
        data.docs.many(ids)
        data.queries.many(group)
        scored += sum(len(data.candidates[qid]) for qid in group)
    return {"candidates": scored}


def phase_stream_run(root: Path) -> dict:
    from peftir.data import folds
    from peftir.data.trec import read_run

    dev = folds.rotation(folds.read_folds(root / "folds.json"), "1")["valid"]
    run = read_run(root / "bm25-all-queries.run", dev, 100)
    return {"queries kept": len(run)}


def phase_rerank_dev_scored(root: Path) -> dict:
    from peftir.contract.backbones import EMBEDDED
    from peftir.data import folds
    from peftir.execution.seam import Execution
    from peftir.semi_siamese.configured import configured_ranker, ranking_data
    from peftir.semi_siamese.contract import resolve_method
    from peftir.semi_siamese.rerank import rerank

    settings = {**SETTINGS, "max_doc_len": 128, "max_seq_len": 128}
    model, _, tokenizer = configured_ranker(
        "twinbert", {"name": EMBEDDED, "layers": 1}, settings, resolve_method("full", {"full": {}}),
        {"ranker": 1e-4, "bert": 1e-5, "peft": 1e-4}, Execution.of(None, threads=2))
    collection = _collection(root)
    dev = folds.rotation(folds.read_folds(collection.folds), "1")["valid"][:300]
    data = ranking_data(collection, str(root / "bm25.run"), dev, 100, tokenizer, settings, keep_docs=False)
    run = rerank(model, data, dev, 64)
    return {"queries": len(run), "candidates": sum(len(docs) for docs in run.values())}


def phase_before_whole_run(root: Path) -> dict:
    """The code before: ``read_run`` of the whole BM25 run (every query), then the job's queries kept."""
    from peftir.data.trec import read_run

    return {"queries": len(read_run(root / "bm25-all-queries.run"))}


def phase_before_all_texts(root: Path) -> dict:
    """The code before: the texts of the candidates of every training query (nearly the whole collection)
    read from ``docs.jsonl`` into a dict."""
    texts = {}
    with open(root / "corpus" / "docs.jsonl") as handle:
        for line in handle:
            doc = json.loads(line)
            texts[doc["id"]] = doc["contents"]
    return {"texts": len(texts)}


PHASES = {"train-data": phase_train_data, "rerank-dev": phase_rerank_dev, "stream-run": phase_stream_run,
          "rerank-dev-scored": phase_rerank_dev_scored}
BEFORE = {"before-whole-run": phase_before_whole_run, "before-all-texts": phase_before_all_texts}


def measure(name: str, root: Path) -> dict:
    """Run one phase in a child process: its wall time, peak RSS and what it reports."""
    start = time.time()
    child = subprocess.Popen([sys.executable, __file__, "--phase", name, "--root", str(root)],
                             stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    output = child.stdout.read()
    if status:
        raise RuntimeError(f"phase {name} failed (status {status})")
    return {"phase": name, "seconds": round(time.time() - start, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            **json.loads(output.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of MS MARCO's counts (default 1)")
    parser.add_argument("--before", action="store_true", help="also measure the code before bounded memory")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps({**PHASES, **BEFORE}[args.phase](args.root)))
        return
    built = build(args.root, args.scale)
    print(json.dumps(built, indent=1))
    results = [measure(name, args.root) for name in [*PHASES, *(BEFORE if args.before else [])]]
    for result in results:
        print(json.dumps(result))
    (args.root / "measured.json").write_text(json.dumps({"built": built, "phases": results}, indent=1))


if __name__ == "__main__":
    main()

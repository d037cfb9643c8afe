"""Loading what a ranking job needs from the exported dataset, already tokenised.

Only the documents that appear in the candidate lists of the requested queries
are read and tokenised, so a job's cost follows its folds, not the collection.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import trec

Tokens = list[int]


@dataclass
class RankingData:
    queries: dict[str, Tokens]
    docs: dict[str, Tokens]
    candidates: trec.Run   # BM25 top-k per query
    qrels: trec.Qrels


def read_docs(path: str | Path, wanted: set[str]) -> dict[str, str]:
    """Texts of the wanted documents from an exported ``docs.jsonl``."""
    texts: dict[str, str] = {}
    with open(path) as handle:
        for line in handle:
            doc = json.loads(line)
            if doc["id"] in wanted:
                texts[doc["id"]] = doc["contents"]
    return texts


def tokenize(tokenizer, texts: dict[str, str], max_len: int) -> dict[str, Tokens]:
    """Word-piece ids without special tokens (rankers add their own markers)."""
    keys = list(texts)
    encoded = tokenizer([texts[k] for k in keys], add_special_tokens=False, truncation=True,
                        max_length=max_len)["input_ids"]
    return dict(zip(keys, encoded))


def load(dataset_dir: str | Path, run_path: str | Path, qids: list[str], depth: int, tokenizer,
         max_query_len: int, max_doc_len: int) -> RankingData:
    """Queries, top-``depth`` candidates, their documents and the qrels for ``qids``."""
    dataset_dir = Path(dataset_dir)
    topics = trec.read_topics(dataset_dir / "queries.tsv")
    run = trec.truncate_run(trec.read_run(run_path), depth)
    candidates = {qid: run.get(qid, {}) for qid in qids}
    wanted = {docid for docs in candidates.values() for docid in docs}
    docs = read_docs(dataset_dir / "corpus" / "docs.jsonl", wanted)
    return RankingData(
        queries=tokenize(tokenizer, {qid: topics[qid] for qid in qids}, max_query_len),
        docs=tokenize(tokenizer, docs, max_doc_len),
        candidates=candidates,
        qrels=trec.read_qrels(dataset_dir / "qrels.txt"),
    )

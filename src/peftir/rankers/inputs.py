"""Loading what a ranking job needs from the exported dataset, already tokenised.

Only the documents that appear in the candidate lists of the requested queries
are read, and a text is tokenised when first used: training samples a few dozen
of its thousands of candidates, so a job's cost follows what it scores, not the
collection or the candidate depth.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..data import trec

Tokens = list[int]


class Tokenized(Mapping[str, Tokens]):
    """Word-piece ids (no special tokens: rankers add their own markers) of texts, computed on first use."""

    def __init__(self, tokenizer, texts: dict[str, str], max_len: int):
        self._tokenizer, self._texts, self._max_len = tokenizer, texts, max_len
        self._ids: dict[str, Tokens] = {}

    def __getitem__(self, key: str) -> Tokens:
        if key not in self._ids:
            self._ids[key] = self._tokenizer(self._texts[key], add_special_tokens=False, truncation=True,
                                             max_length=self._max_len)["input_ids"]
        return self._ids[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


@dataclass(frozen=True)
class Collection:
    """A dataset's exported files (``peftir.layout.PATHS``: queries, qrels, docs, folds)."""

    queries: str
    qrels: str
    docs: str
    folds: str


@dataclass
class RankingData:
    queries: Mapping[str, Tokens]
    docs: Mapping[str, Tokens]
    candidates: trec.Run   # BM25 top-k per query
    qrels: trec.Qrels


def read_docs(path: str | Path, wanted: set[str]) -> dict[str, str]:
    """Texts of the wanted documents from an exported ``docs.jsonl``; a malformed line is named by file and
    line, and a wanted document the file lacks (a run from another collection) is an error."""
    texts: dict[str, str] = {}
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            try:
                doc = json.loads(line)
                docid, contents = doc["id"], doc["contents"]
            except (ValueError, KeyError, TypeError) as problem:
                raise trec.MalformedFileError(f"{path}, line {number}: not a document "
                                              f'({{"id": ..., "contents": ...}}): {problem}') from None
            if docid in wanted:
                texts[docid] = contents
    missing = sorted(wanted - set(texts))
    if missing:
        raise trec.MalformedFileError(f"{path}: {len(missing)} candidate documents are not in the collection "
                                      f"(e.g. {missing[:5]}): the run comes from another collection")
    return texts


def load(collection: Collection, run_path: str | Path, qids: list[str], depth: int, tokenizer,
         max_query_len: int, max_doc_len: int) -> RankingData:
    """Queries, top-``depth`` candidates, their documents and the qrels for ``qids``."""
    topics = trec.read_topics(collection.queries)
    run = trec.truncate_run(trec.read_run(run_path), depth)
    candidates = {qid: run.get(qid, {}) for qid in qids}
    wanted = {docid for docs in candidates.values() for docid in docs}
    return RankingData(
        queries=Tokenized(tokenizer, {qid: topics[qid] for qid in qids}, max_query_len),
        docs=Tokenized(tokenizer, read_docs(collection.docs, wanted), max_doc_len),
        candidates=candidates,
        qrels=trec.read_qrels(collection.qrels),
    )

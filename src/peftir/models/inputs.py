"""What a ranking job reads from the exported dataset, tokenised when first used.

Memory follows what a job scores, never the collection: the BM25 run is streamed for the queries
asked for, documents are looked up by id in the on-disk store (``peftir.data.docstore``) when a batch
needs them, and their word pieces are kept, compactly, only where they are scored again (the
validation candidates, reranked after every epoch).
"""
from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..data import trec
from ..data.docstore import DocStore

Tokens = list[int]


class TokenLookup(Protocol):
    """Word-piece ids of texts by id, for a batch at a time."""

    def many(self, keys: Sequence[str]) -> list[Tokens]: ...


class Tokenized:
    """Word-piece ids (no special tokens: rankers add their own markers) of the texts ``source`` gives for
    a batch of ids, computed on first use. With ``keep`` they are remembered as 32-bit arrays (a Python
    list of ints costs ~9× as much); training documents drawn from millions of triples are not kept."""

    def __init__(self, tokenizer, source: Callable[[Sequence[str]], Mapping[str, str]], max_len: int,
                 keep: bool = True) -> None:
        self._tokenizer, self._source, self._max_len, self._keep = tokenizer, source, max_len, keep
        self._ids: dict[str, array] = {}

    def many(self, keys: Sequence[str]) -> list[Tokens]:
        new = [key for key in dict.fromkeys(keys) if key not in self._ids]
        fresh = {}
        if new:
            texts = self._source(new)
            encoded = self._tokenizer([texts[key] for key in new], add_special_tokens=False, truncation=True,
                                      max_length=self._max_len)["input_ids"]
            fresh = dict(zip(new, encoded))
            if self._keep:
                self._ids.update((key, array("i", ids)) for key, ids in fresh.items())
        return [fresh[key] if key in fresh else self._ids[key].tolist() for key in keys]


@dataclass(frozen=True)
class Collection:
    """A dataset's exported files (``peftir.pipeline.contract.PATHS``: queries, qrels, docs and their lookup, folds)."""

    queries: str
    qrels: str
    docs: str
    docs_lookup: str
    folds: str

    @classmethod
    def of(cls, named: Mapping[str, object]) -> Collection:
        """The collection among a job's named inputs (the names ``peftir.contract.inputs.collection`` gives)."""
        return cls(**{name: str(named[name]) for name in cls.__dataclass_fields__})

    def store(self) -> DocStore:
        return DocStore(self.docs, self.docs_lookup)


@dataclass
class RankingData:
    queries: TokenLookup
    docs: TokenLookup
    candidates: trec.Run   # BM25 top-k per query
    qrels: trec.Qrels


def texts(collection: Collection, qids: Sequence[str], tokenizer, max_query_len: int, max_doc_len: int,
          keep_docs: bool) -> tuple[Tokenized, Tokenized]:
    """The queries ``qids`` and the collection's documents, tokenised on demand to the length limits."""
    topics = trec.read_topics(collection.queries, qids)
    return (Tokenized(tokenizer, lambda ids: {qid: topics[qid] for qid in ids}, max_query_len),
            Tokenized(tokenizer, collection.store().texts, max_doc_len, keep=keep_docs))


def load(collection: Collection, run_path: str, qids: Sequence[str], depth: int, tokenizer, max_query_len: int,
         max_doc_len: int, keep_docs: bool = True) -> RankingData:
    """Queries ``qids``, their top-``depth`` candidates (streamed from the run), their documents on demand
    and the qrels."""
    queries, docs = texts(collection, qids, tokenizer, max_query_len, max_doc_len, keep_docs)
    run = trec.read_run(run_path, qids, depth)
    return RankingData(queries=queries, docs=docs, candidates={qid: run.get(qid, {}) for qid in qids},
                       qrels=trec.read_qrels(collection.qrels))

"""Fixed training triples for collections whose training data comes as triples (MS MARCO).

The released Semi-Siamese code trains on MS MARCO from the official training triples, read in file
order (Robust04 and ClueWeb09b sample from BM25 candidates instead, ``peftir.semi_siamese.loop``). The
``triples`` rule writes them once, as ``qid<TAB>relevant<TAB>non-relevant`` lines:

- ``docpairs``: the training split's own triples in ir_datasets (MS MARCO passage's official
  ``triples.train.small``), as they come;
- ``doctriples``: MS MARCO documents have no triples file; Microsoft's ``msmarco-doctriples.py``
  makes one from the official top-100 of every training query (ir_datasets' scoreddocs of the
  split): per query, in the top-100 file's order, a random relevant document and a random one of its
  top 100, the query skipped when that one is itself relevant. The same procedure here, seeded
  (the script is not), so the file is the same on every machine.

Every document a triple names must be in the exported collection (checked against its lookup).
"""
from __future__ import annotations

import random
import sys
from collections import Counter
from itertools import groupby
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..errors import ActionableError
from ..files import atomic_write
from .docstore import DocStore
from .folds import read_folds
from .trec import Qrels, read_qrels

Triple = tuple[str, str, str]


def doc_triples(scored: Iterable[Any], qrels: Qrels, train: set[str], rng: random.Random,
                counts: Counter) -> Iterator[Triple]:
    """``msmarco-doctriples.py``: one triple per training query with a relevant document, from its scored
    documents (consecutive records, in rank order): a random relevant document and a random scored one,
    unless that one is relevant too (the script's "docid collision": the query is skipped)."""
    for qid, records in groupby(scored, key=lambda record: record.query_id):
        relevant = sorted(docid for docid, rel in qrels.get(qid, {}).items() if rel > 0)
        if qid not in train or not relevant:
            counts["queries without a relevant document or not in the training split"] += 1
            continue
        drawn = rng.choice([record.doc_id for record in records])
        positive = rng.choice(relevant)
        if drawn in relevant:
            counts["queries skipped: the drawn candidate is relevant"] += 1
            continue
        counts["triples"] += 1
        yield qid, positive, drawn


def doc_pairs(pairs: Iterable[Any], train: set[str], counts: Counter) -> Iterator[Triple]:
    """ir_datasets docpairs (``query_id, doc_id_a, doc_id_b``: a relevant, b not) of training queries."""
    for pair in pairs:
        if pair.query_id in train:
            counts["triples"] += 1
            yield pair.query_id, pair.doc_id_a, pair.doc_id_b
        else:
            counts["pairs of queries outside the training split"] += 1


def _checked(triples: Iterable[Triple], store: DocStore, batch: int = 10_000) -> Iterator[Triple]:
    """The triples, after checking a batch at a time that the collection holds their documents."""
    pending: list[Triple] = []
    for triple in triples:
        pending.append(triple)
        if len(pending) == batch:
            yield from _present(pending, store)
            pending = []
    yield from _present(pending, store)


def _present(triples: list[Triple], store: DocStore) -> list[Triple]:
    missing = store.missing([docid for _, positive, negative in triples for docid in (positive, negative)])
    if missing:
        raise ActionableError(f"{len(missing)} documents of the training triples are not in the collection "
                              f"{store.docs} (e.g. {missing[:5]}): the triples come from another collection")
    return triples


def make_triples(spec: Mapping[str, Any], qrels: str | Path, folds: str | Path, docs: str | Path,
                 lookup: str | Path, output: str | Path) -> Counter:
    """The ``triples`` rule: the training triples of ``spec`` (``source``, ``irds``: the training split,
    ``seed`` for doctriples) written to ``output``; what was kept and skipped goes to the log."""
    import ir_datasets  # lazy: binds IR_DATASETS_HOME at import time

    train = set(read_folds(folds)["splits"]["train"])
    dataset, counts = ir_datasets.load(spec["irds"]), Counter()
    if spec["source"] == "docpairs":
        triples = doc_pairs(dataset.docpairs_iter(), train, counts)
    elif spec["source"] == "doctriples":
        triples = doc_triples(dataset.scoreddocs_iter(), read_qrels(qrels), train, random.Random(spec["seed"]),
                              counts)
    else:
        raise ValueError(f"training triples from {spec['source']!r}: allowed: docpairs, doctriples")
    with DocStore(docs, lookup) as store, atomic_write(output) as handle:
        for qid, positive, negative in _checked(triples, store):
            handle.write(f"{qid}\t{positive}\t{negative}\n")
    if not counts["triples"]:
        raise ActionableError(f"{spec['irds']}: no training triple for the {len(train)} training queries")
    for what, count in sorted(counts.items()):
        print(f"{spec['irds']}: {count} {what}", file=sys.stderr)
    return counts

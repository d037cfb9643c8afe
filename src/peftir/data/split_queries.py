"""Query ids of a pre-split collection, kept apart when its splits number their queries independently.

ir_datasets numbers DPR's Natural Questions questions 0, 1, … in each of its files, so a training question and a
dev question share an id (as the real train and dev files do): merged into one dataset, the dev question would
overwrite the training one and the folds would find one query in two splits. When the split sources of a dataset
give one id to different queries, every query id is prefixed with its source's short name (``train-0``,
``dev-0``), in the exported queries and qrels and in the folds alike; collections whose splits share no id, or
share the same queries (a test split that is also the validation split), keep their ids.
"""
from __future__ import annotations

from typing import Any, Mapping

Prefixes = dict[str, str]           # split source (an ir_datasets id) → prefix of its query ids


def _load(irds_id: str) -> Any:
    import ir_datasets  # lazy: binds IR_DATASETS_HOME at import time

    return ir_datasets.load(irds_id)


def _sources(spec: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys((spec.get("splits") or {}).values()))


def prefixes(spec: Mapping[str, Any]) -> Prefixes:
    """The prefix of each split source's query ids: none when the sources never give one id to two different
    queries (records that differ); else each source's last path part (its index where two share one)."""
    sources = _sources(spec)
    if len(sources) < 2:
        return {}
    seen: dict[str, tuple[str, tuple]] = {}
    for source in sources:
        for query in _load(source).queries_iter():
            first = seen.setdefault(query.query_id, (source, tuple(query)))
            if first[0] != source and first[1] != tuple(query):
                names = [source.rsplit("/", 1)[-1] for source in sources]
                unique = len(set(names)) == len(names)
                return {source: name if unique else str(index)
                        for index, (source, name) in enumerate(zip(sources, names))}
    return {}


def query_id(prefixed: Prefixes, source: str, qid: str) -> str:
    """``qid`` of ``source`` as the pipeline names it."""
    return f"{prefixed[source]}-{qid}" if prefixed else qid

"""What a first-stage run's weights give again, for ``peftir audit --rescore``: the form every system's rescoring
returns, so the audit compares them one way (``peftir.app.rescore``)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from ..data import trec


@dataclass
class Rescored:
    """For a sample of a run's queries: their search in the stored index again, or their candidates reranked again
    (``searched``: each query's documents and scores); for a first-stage run, the score of every document the run
    holds for them from the stored vectors (``exact``), and the scores of their top documents encoded again from
    their text (``encoded``, or for SPLADE a comparison of the vectors, ``vectors_differ``), which show that the
    index's vectors come from the same weights; the precision the job scored in and the one used here; why no
    document was encoded again, where that could not be done."""

    searched: dict[str, dict[str, float]]
    exact: dict[str, dict[str, float]] = field(default_factory=dict)    # every run document's, from stored vectors
    slack: dict[str, dict[str, float]] = field(default_factory=dict)    # an allowance beside the tolerance
    exact_search: bool = True         # False for an approximate (HNSW) index: what it finds may differ
    encoded: dict[str, dict[str, float]] = field(default_factory=dict)
    vectors_differ: str | None = None  # why a re-encoded document's vector is not the stored one
    ran: str | None = None            # the precision the job scored in, from its run's ir_metadata (None: unsaid)
    used: str = "fp32"
    not_encoded: str | None = None


RE_ENCODED = 10       # of each sampled query's documents, the top ones encoded again from their text


def precision_ran(record: dict) -> str | None:
    """The precision the job that wrote a run scored in: its ir_metadata's ``method.execution`` (what ``bf16``
    became where it ran: fp32 on a CPU); None for a run written before that was recorded."""
    import yaml

    metadata = next(iter(record["outputs"].get("metadata", {})), None)
    if metadata is None or not Path(metadata).is_file():
        return None
    method = (yaml.safe_load(Path(metadata).read_text()) or {}).get("method") or {}
    return (method.get("execution") or {}).get("precision")


def precision_of(execution) -> str:
    """The precision an ``Execution`` scores in here."""
    return "bf16" if execution.autocast is not None else "fp32"


def sample_queries(run_path: str, stored: dict[str, dict[str, float]], topics: dict[str, str], queries: int
                   ) -> list[str]:
    """``queries`` of the run's queries, drawn with the run's path as seed: the same sample on every audit."""
    candidates = sorted(set(stored) & set(topics))
    return random.Random(run_path).sample(candidates, min(queries, len(candidates)))


def top_documents(stored: dict[str, dict[str, float]], sample: list[str]) -> dict[str, list[str]]:
    """Each sampled query's ``RE_ENCODED`` best documents in the run."""
    return {qid: [doc for doc, _ in trec.ranked(stored[qid])[:RE_ENCODED]] for qid in sample}


def top_texts(found: Rescored, index: str, stored: dict[str, dict[str, float]], sample: list[str]
              ) -> tuple[dict[str, list[str]], dict[str, str]] | None:
    """Each sampled query's top documents and their texts, read from the collection the index was encoded from
    (its job's ``docs`` input); None, with ``found.not_encoded`` saying why, where that collection is not here."""
    from ..provenance.records import read_record

    docs = next(iter(read_record(index)["inputs"]["docs"]))
    if not Path(docs).is_file():
        found.not_encoded = f"the documents {docs} the index was encoded from are not here"
        return None
    tops = top_documents(stored, sample)
    return tops, texts_of(docs, {doc for top in tops.values() for doc in top})


def texts_of(docs: str, ids: set[str]) -> dict[str, str]:
    """The texts of ``ids`` in the collection ``docs`` (``docs.jsonl``), read a window at a time until all are
    found."""
    from ..data.docstore import document_windows

    found: dict[str, str] = {}
    for window_ids, window_texts in document_windows(docs):
        found.update((doc, text) for doc, text in zip(window_ids, window_texts) if doc in ids)
        if len(found) == len(ids):
            break
    return found

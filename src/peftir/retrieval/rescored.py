"""What a first-stage run's weights give again, for ``peftir audit --rescore``: the form every system's rescoring
returns, so the audit compares them one way (``peftir.app.rescore``)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Rescored:
    """For a sample of a run's queries: their search in the stored index again (``searched``: each query's documents
    and scores, best first), and the scores of each query's top documents encoded again from their text
    (``encoded``), which show that the index's vectors come from the same weights; the precision the job asked for
    and the one used here; why no document was encoded again, where that could not be done."""

    searched: dict[str, dict[str, float]]
    encoded: dict[str, dict[str, float]] = field(default_factory=dict)
    asked: str = "fp32"
    used: str = "fp32"
    not_encoded: str | None = None


RE_ENCODED = 10       # of each sampled query's documents, the top ones encoded again from their text


def sample_queries(run_path: str, stored: dict[str, dict[str, float]], topics: dict[str, str], queries: int
                   ) -> list[str]:
    """``queries`` of the run's queries, drawn with the run's path as seed: the same sample on every audit."""
    candidates = sorted(set(stored) & set(topics))
    return random.Random(run_path).sample(candidates, min(queries, len(candidates)))


def top_documents(stored: dict[str, dict[str, float]], sample: list[str]) -> dict[str, list[str]]:
    """Each sampled query's ``RE_ENCODED`` best documents in the run."""
    return {qid: sorted(stored[qid], key=lambda doc: -stored[qid][doc])[:RE_ENCODED] for qid in sample}


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

"""Re-deriving a run file from its weights: ``peftir audit --rescore N``.

Hashes show that nothing changed after a job wrote its outputs; they cannot show that a run file
was ever computed from the weights its record names (a forged run with every hash recomputed
passes them). Rescoring loads the kept weights with the settings the job recorded and recomputes N of
the run's queries (a sample fixed by the run's path) with the same code the job ran:

- a reranking: each sampled query's candidates scored again by the stored reranker (or the same composition of
  its stored modules); the documents and every score must be the run's;
- a first stage's search: N queries encoded again; every document the run holds for them must have the run's score
  against its stored vector, the stored index searched again must find nothing above the run's last score that the
  run lacks, and their top documents encoded again from their text must give the same scores (or vectors, within
  what rounding can move).

Each system registers the rules whose runs it can re-derive, which of the two checks each gets and the function
that scores again (``peftir.systems.System.rescorers``: its rescore module, imported only when a run is rescored).
``RESCORED_RULES`` names the rules it covers; ``peftir audit`` names every other run made from weights as not
rescored.
"""
from __future__ import annotations

import math
from typing import Callable

from ..data.trec import read_run
from ..retrieval.rescored import Rescored
from ..systems import load, registered

# Scores are recomputed in other batches than the job's (fewer queries, so other padding): float32
# sums agree to about 1e-6 relative; a changed score, or one from other weights, differs far more.
TOLERANCE = 1e-4
# A run scored with a bf16 encoder (a GPU) and rescored in fp32 (a CPU), or the reverse, differs by
# bf16's rounding (8 bits of mantissa in the encoder's products); measured: see README, "Mixed precision".
ACROSS_PRECISIONS = 5e-2


def _close(a: float, b: float, tolerance: float) -> bool:
    return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def _same_scores(qid: str, rescored: dict[str, float], stored: dict[str, float], tolerance: float, what: str,
                 slack: dict[str, float] | None = None) -> str | None:
    """Why the scores ``rescored`` (of documents the run holds) are not the run's ``stored`` ones, or None; a
    document's ``slack`` is an absolute allowance beside the tolerance (an impact index's rounding)."""
    for docid, score in sorted(rescored.items()):
        allowed = (slack or {}).get(docid, 0.0)
        if abs(score - stored[docid]) > allowed and not _close(score, stored[docid], tolerance):
            return f"query {qid}, document {docid}: the run file says {stored[docid]!r}, {what} give {score!r}"
    return None


Outcome = tuple[str | None, str | None, int]   # why the run is not its weights'; what was not checked; queries


def _tolerance(found: Rescored) -> tuple[float, str | None]:
    """The tolerance for the run's scores: float sums' where the run was scored in the precision used here, bf16's
    where it was not, or where its ir_metadata does not say (a run written before it did: said)."""
    if found.ran is None:
        return ACROSS_PRECISIONS, "the run's ir_metadata does not say its precision: compared within bf16's rounding"
    return (TOLERANCE if found.ran == found.used else ACROSS_PRECISIONS), None


def _reranking(rescored: Callable[[str, dict, int], Rescored]) -> Callable[[str, dict, int], Outcome]:
    """A reranker's rescoring: each sampled query's candidates scored again must be the run's documents, with its
    scores."""

    def check(run_path: str, record: dict, queries: int) -> Outcome:
        stored = read_run(run_path)
        found = rescored(run_path, record, queries)
        tolerance, unsaid = _tolerance(found)
        for qid, docs in sorted(found.searched.items()):
            if set(docs) != set(stored.get(qid, {})):
                return f"query {qid}: the weights rank other documents than the run file holds", None, 0
            why = _same_scores(qid, docs, stored[qid], tolerance,
                               f"its weights ({found.used} here; the run: {found.ran or 'unsaid'})")
            if why:
                return why, None, 0
        return None, unsaid, len(found.searched)

    return check


def _first_stage(rescored: Callable[[str, dict, int], Rescored]) -> Callable[[str, dict, int], Outcome]:
    """A first-stage run's rescoring: for each sampled query, every document the run holds must
    have the run's score from its stored vector; the index searched again must find nothing above the run's last
    score that the run lacks (exact search), nor more documents than the run holds at its depth; and the top
    documents encoded again must give the stored vectors' scores (or vectors)."""

    def check(run_path: str, record: dict, queries: int) -> Outcome:
        stored = read_run(run_path)
        found = rescored(run_path, record, queries)
        tolerance, unsaid = _tolerance(found)
        weights = next(iter(record["inputs"].get("model", {})), "the backbone as it comes")
        for qid, hits in sorted(found.searched.items()):
            run, exact = stored[qid], found.exact.get(qid, {})
            missing = sorted(set(run) - set(exact))
            if missing:
                return f"query {qid}: the run holds document {missing[0]}, which the index does not", None, 0
            why = _same_scores(qid, exact, run, tolerance, f"its stored vector and the query encoded by the weights "
                               f"{weights} ({found.used} here; the run: {found.ran or 'unsaid'})", found.slack.get(qid))
            if why:
                return why, None, 0
            if found.exact_search:
                last = min(run.values())
                for docid, score in hits.items():     # at the depth's boundary, near-ties may fall either way
                    if docid not in run and score > last and not _close(score, last, tolerance):
                        return (f"query {qid}: the weights {weights} find document {docid} ({score!r}) above the "
                                f"run's last score ({last!r}), and the run file lacks it"), None, 0
                if len(run) < len(hits):
                    return (f"query {qid}: the run holds {len(run)} documents, the index searched again at the "
                            f"run's depth {len(hits)}"), None, 0
            why = _same_scores(qid, found.encoded.get(qid, {}), run, tolerance,
                               f"the weights {weights} encoding the document's text again ({found.used} here)")
            if why:
                return why, None, 0
        if found.vectors_differ:
            return f"the index's vectors are not what the weights {weights} give: {found.vectors_differ}", None, 0
        notes = [note for note in (unsaid, found.not_encoded) if note]
        if not found.exact_search:
            notes.append("an approximate (HNSW) index: what a search finds is not required to be the run's")
        return None, "; ".join(notes) or None, len(found.searched)

    return check


def _scorer(target: str) -> Callable[[str, dict, int], Rescored]:
    """A system's function that scores again (``module:function``), imported when first called: the modules that
    load weights are heavy, and most audits rescore nothing."""
    return lambda run_path, record, queries: load(target)(run_path, record, queries)


CHECKS = {"reranking": _reranking, "first_stage": _first_stage}
# the rules whose runs rescoring re-derives, each with how (each registered system's ``rescorers``)
RESCORED_RULES: dict[str, Callable[[str, dict, int], Outcome]] = {
    rule: CHECKS[check](_scorer(target))
    for system in registered() for rule, (check, target) in system.rescorers.items()}


def rescore(run_path: str, record: dict, queries: int) -> Outcome:
    """Why the run file ``run_path`` (made by ``record``) is not what its weights give on ``queries`` sampled
    queries (None when every score agrees within ``TOLERANCE``, ``ACROSS_PRECISIONS`` when the run was scored in
    another precision than the one here), what part of the check could not be made here (None: all of it), and
    how many queries were rescored (0: none could be)."""
    return RESCORED_RULES[record["rule"]](run_path, record, queries)

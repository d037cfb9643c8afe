"""Reading and writing the TREC formats every stage exchanges (runs, qrels, topics).

Runs are plain six-column TREC runs (``qid Q0 docid rank score tag``), with no comment lines:
trec_eval 9.0 rejects '#' lines ("Malformed line 1") and its later support for them was reverted,
because MS MARCO document ids may contain '#'. A run's ir_metadata lives beside it instead
(``peftir.provenance.ir_metadata``). Every reader checks each line and names file and line when one
is malformed; files are written atomically (``peftir.files``), so an interrupted job never leaves one
that Snakemake would take as complete.
"""
from __future__ import annotations

import math
import os
import re
import sys
from collections import defaultdict
from typing import Collection, Iterable, Iterator, Mapping

from ..errors import ActionableError
from ..files import atomic_write

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]
QUERY_BLOCK = 4_096      # queries encoded, searched and written at a time: MS MARCO's 509 k are never held at once
IDENTIFIER = re.compile(r"\S+")    # query and document ids: one whitespace-free token in every format


class MalformedFileError(ActionableError):
    """A line of an input file that its format does not allow; the message names file and line."""


class NonFiniteScoreError(ActionableError):
    """A run to be written holds a NaN or infinite score (a diverged model): the message names file and query."""


def check_id(kind: str, value: str, where: str) -> None:
    """Ids are single whitespace-free tokens, or a run or qrels line would split them."""
    if not IDENTIFIER.fullmatch(value):
        raise MalformedFileError(f"{where}: {kind} id {value!r} is empty or holds whitespace; "
                                 f"TREC runs and qrels cannot represent it")


def numbered_lines(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """Non-blank lines with their place (``file, line N``) for error messages."""
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield f"{path}, line {number}", line


def parse_run_line(line: str, where: str) -> tuple[str, str, float]:
    """(qid, docid, score) of a six-column TREC run line, checked as trec_eval parses one; ``where`` (file and
    line) names it when it is malformed."""
    fields = line.split()
    try:
        if len(fields) != 6:
            raise ValueError(f"{len(fields)} columns")
        qid, _, docid, rank, score, _ = fields
        int(rank)
        value = float(score)
        if not math.isfinite(value):     # float() takes "nan" and "inf": a diverged model's scores rank arbitrarily
            raise ValueError(f"score {score!r} is not a finite number")
        return qid, docid, value
    except ValueError as problem:
        raise MalformedFileError(f"{where}: not a TREC run line (qid Q0 docid rank score tag; {problem}): "
                                 f"{line.rstrip()!r}") from None


def _run_lines(path: str | os.PathLike) -> Iterator[tuple[str, str, float]]:
    """(qid, docid, score) of each line of a six-column TREC run."""
    for where, line in numbered_lines(path):
        yield parse_run_line(line, where)


def read_run(path: str | os.PathLike, qids: Collection[str] | None = None, depth: int | None = None) -> Run:
    """Read a six-column TREC run, streaming: only the queries ``qids`` (all when None) are kept, each cut
    to its top ``depth`` documents when given, so memory follows what the caller asks for, not the file
    (MS MARCO's BM25 run holds tens of millions of lines)."""
    wanted = None if qids is None else set(qids)
    run: Run = defaultdict(dict)
    for qid, docid, score in _run_lines(path):
        if wanted is None or qid in wanted:
            run[qid][docid] = score
    return truncate_run(run, depth) if depth is not None else dict(run)


def run_blocks(path: str | os.PathLike) -> Iterator[tuple[str, dict[str, float]]]:
    """A run file query by query, for runs written one query at a time (Anserini's): memory of one query."""
    done: set[str] = set()
    qid, docs = None, {}
    for line_qid, docid, score in _run_lines(path):
        if line_qid != qid:
            if qid is not None:
                yield qid, docs
            if line_qid in done:
                raise MalformedFileError(f"{path}: the lines of query {line_qid} are not together")
            done.add(line_qid)
            qid, docs = line_qid, {}
        docs[docid] = score
    if qid is not None:
        yield qid, docs


def ranked(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents by descending score, ties by descending docid: the order trec_eval and pytrec_eval rank the same
    scores in (``comp_sim_docno``: score, then ``strcmp`` of the docids reversed), and the order
    ``evaluation.metrics`` gives a run before any ir_measures provider reads it. So a run written or cut at depth k
    here keeps, at a tie on the boundary, the documents the evaluator ranks in its top k. Python compares str by
    code point, which for UTF-8 text is ``strcmp``'s byte order."""
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


def write_run(path: str | os.PathLike, run: Mapping[str, Mapping[str, float]] | Iterable[tuple[str, Mapping[str, float]]],
              tag: str) -> None:
    """Write a six-column TREC run atomically, ranks recomputed from scores: a mapping (queries in id
    order) or an iterable of (qid, documents), written in the order given."""
    check_id("run tag", tag, str(path))
    queries = ((qid, run[qid]) for qid in sorted(run)) if isinstance(run, Mapping) else run
    with atomic_write(path) as handle:
        for qid, docs in queries:
            broken = sorted(docid for docid, score in docs.items() if not math.isfinite(score))
            if broken:          # sorting NaN keys ranks at random: refused before a plausible run is written
                raise NonFiniteScoreError(f"{path}: query {qid}: {len(broken)} non-finite score(s) (documents "
                                          f"{', '.join(broken[:5])}{' …' if len(broken) > 5 else ''}: "
                                          f"{docs[broken[0]]!r}); the model diverged or its inputs overflowed, "
                                          f"and no run is written")
            for rank, (docid, score) in enumerate(ranked(docs), start=1):
                handle.write(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")


def answered_queries(run: Run) -> set[str]:
    """The queries of a run with at least one document."""
    return {qid for qid, docs in run.items() if docs}


def report_missing(answered_qids: Collection[str], qids: Iterable[str], where: str) -> list[str]:
    """Queries of ``qids`` not among ``answered_qids`` (those with a document in a run), said on standard
    error (the job's log)."""
    missing = sorted(set(qids) - set(answered_qids))
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        print(f"{where}: {len(missing)} queries have no document in the run: {shown}", file=sys.stderr)
    return missing


def truncate_run(run: Run, depth: int) -> Run:
    """Keep each query's top ``depth`` documents, as the evaluator ranks them (``ranked``)."""
    return {qid: dict(ranked(docs)[:depth]) for qid, docs in run.items()}


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read TREC qrels (``qid iteration docid relevance``, relevance an integer)."""
    qrels: Qrels = defaultdict(dict)
    for where, line in numbered_lines(path):
        fields = line.split()
        try:
            if len(fields) != 4:
                raise ValueError(f"{len(fields)} columns")
            qid, _, docid, rel = fields
            qrels[qid][docid] = int(rel)
        except ValueError as problem:
            raise MalformedFileError(f"{where}: not a qrels line (qid iteration docid relevance; {problem}): "
                                     f"{line.rstrip()!r}") from None
    return dict(qrels)


def query_blocks(qids: list[str], size: int = QUERY_BLOCK) -> Iterator[list[str]]:
    """``qids`` in consecutive blocks of ``size``."""
    for start in range(0, len(qids), size):
        yield qids[start:start + size]


def relevant(qrels: Qrels, qid: str, at_least: int = 1) -> list[str]:
    """The documents judged relevant to ``qid`` (grade ≥ ``at_least``): a training query's positives."""
    return [doc for doc, grade in qrels.get(qid, {}).items() if grade >= at_least]


def judged_non_relevant(qrels: Qrels, qid: str) -> list[str]:
    """The documents judged non-relevant (grade 0) to ``qid``: in DPR's collections, its BM25 hard negatives, which
    contain no answer (grade −1, DPR's random negatives, left out)."""
    return [doc for doc, grade in qrels.get(qid, {}).items() if grade == 0]


def not_relevant(qrels: Qrels, qid: str, documents: Iterable[str]) -> list[str]:
    """``documents`` (in order) that are not judged relevant to ``qid``, unjudged ones included: where hard
    negatives come from."""
    judged = qrels.get(qid, {})
    return [doc for doc in documents if judged.get(doc, 0) <= 0]


def write_qrels(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]]) -> None:
    with atomic_write(path) as handle:
        for qid in sorted(qrels):
            for docid in sorted(qrels[qid]):
                handle.write(f"{qid} 0 {docid} {qrels[qid][docid]}\n")


def read_topics(path: str | os.PathLike, qids: Collection[str] | None = None) -> dict[str, str]:
    """Read a ``qid<TAB>text`` topics file: one id, a non-empty text; only ``qids`` when given."""
    wanted = None if qids is None else set(qids)
    topics: dict[str, str] = {}
    for where, line in numbered_lines(path):
        qid, tab, text = line.rstrip("\n").partition("\t")
        if not tab or not text.strip():
            raise MalformedFileError(f"{where}: expected query id<TAB>non-empty text: {line.rstrip()!r}")
        check_id("query", qid, where)
        if wanted is None or qid in wanted:
            topics[qid] = text
    return topics


def write_topics(path: str | os.PathLike, topics: Mapping[str, str]) -> None:
    """Write ``qid<TAB>text``; tabs and newlines inside the text become spaces."""
    with atomic_write(path) as handle:
        for qid, text in topics.items():
            handle.write(f"{qid}\t{' '.join(text.split())}\n")

"""Reading and writing the TREC formats every stage exchanges (runs, qrels, topics).

Files are written atomically (``peftir.files``), so an interrupted job never leaves one that
Snakemake would take as complete.
"""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Mapping

from ..files import atomic_write

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run (``qid Q0 docid rank score tag``); lines starting with '#' are comments."""
    run: Run = defaultdict(dict)
    with open(path) as handle:
        for line in handle:
            if not line.strip() or line.startswith("#"):
                continue
            qid, _, docid, _, score, *_ = line.split()
            run[qid][docid] = float(score)
    return dict(run)


def ranked(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents by descending score, ties broken by docid so every writer ranks alike."""
    return sorted(docs.items(), key=lambda item: (-item[1], item[0]))


def write_run(path: str | os.PathLike, run: Mapping[str, Mapping[str, float]], tag: str,
              header: list[str] | None = None) -> None:
    """Write a TREC run atomically, ranks recomputed from scores, optional '#' header lines."""
    with atomic_write(path) as handle:
        for line in header or []:
            handle.write(f"# {line}\n")
        for qid in sorted(run):
            for rank, (docid, score) in enumerate(ranked(run[qid]), start=1):
                handle.write(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")


def truncate_run(run: Run, depth: int) -> Run:
    """Keep each query's top ``depth`` documents."""
    return {qid: dict(ranked(docs)[:depth]) for qid, docs in run.items()}


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read TREC qrels (``qid iteration docid relevance``)."""
    qrels: Qrels = defaultdict(dict)
    with open(path) as handle:
        for line in handle:
            if line.strip():
                qid, _, docid, rel = line.split()[:4]
                qrels[qid][docid] = int(rel)
    return dict(qrels)


def write_qrels(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]]) -> None:
    with atomic_write(path) as handle:
        for qid in sorted(qrels):
            for docid in sorted(qrels[qid]):
                handle.write(f"{qid} 0 {docid} {qrels[qid][docid]}\n")


def read_topics(path: str | os.PathLike) -> dict[str, str]:
    """Read a ``qid<TAB>text`` topics file."""
    topics: dict[str, str] = {}
    with open(path) as handle:
        for line in handle:
            if line.strip():
                qid, text = line.rstrip("\n").split("\t", 1)
                topics[qid] = text
    return topics


def write_topics(path: str | os.PathLike, topics: Mapping[str, str]) -> None:
    """Write ``qid<TAB>text``; tabs and newlines inside the text become spaces."""
    with atomic_write(path) as handle:
        for qid, text in topics.items():
            handle.write(f"{qid}\t{' '.join(text.split())}\n")

"""A cross-encoder's scores for MarginMSE distillation (Table 2), as a TREC run the training job reads.

The paper distils from ``cross-encoder/ms-marco-MiniLM-L-6-v2``'s scores of MS MARCO's hard negatives, the file
the released code reads (``cross-encoder-ms-marco-MiniLM-L-6-v2-scores.pkl.gz`` of sentence-transformers'
``msmarco-hard-negatives``: a pickled ``{qid: {pid: score}}`` of integers and floats). It is read with an
unpickler that builds nothing but those (a pickle from the internet can run code otherwise), kept for the
dataset's training queries only, and written as a run: each query's scored documents (relevant ones included,
which MarginMSE needs as positives) by score. The file is an input of the jobs that read it (downloaded by its own
job from a URL), checked against ``sparse_retrieval.teacher.sha256`` where that is given.
"""
from __future__ import annotations

import gzip
import pickle
import shutil
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from ..data import folds, trec
from ..errors import ActionableError
from ..files import atomic_write
from ..provenance.records import sha256


class TeacherScoresError(ActionableError):
    """The teacher's scores cannot be had: the file is elsewhere than configured, or not a scores pickle."""


class _ScoresOnly(pickle.Unpickler):
    """Dicts, integers and floats are pickle opcodes of their own; any class a file asks for is refused."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refusing to build {module}.{name}: a scores file holds dicts and numbers")


def read_scores(path: str | Path) -> dict[str, dict[str, float]]:
    """The pickled ``{qid: {pid: score}}`` with ids as strings."""
    try:
        with gzip.open(path, "rb") as handle:
            scores = _ScoresOnly(handle).load()
    except (OSError, EOFError, pickle.UnpicklingError) as problem:
        raise TeacherScoresError(f"{path}: not a gzipped pickle of {{qid: {{pid: score}}}} ({problem})") from None
    if not isinstance(scores, dict):
        raise TeacherScoresError(f"{path}: a {type(scores).__name__}, not a {{qid: {{pid: score}}}} dict")
    return {str(qid): {str(pid): float(score) for pid, score in docs.items()} for qid, docs in scores.items()}


def check_pinned(path: str | Path, pinned: str | None) -> str:
    """The file's sha256, refused when it is not the pinned one (``sparse_retrieval.teacher.sha256``; None: not
    pinned, and the job's record holds the sha256 it read)."""
    got = sha256(path)
    if pinned and got != pinned.lower():
        raise TeacherScoresError(f"{path}: sha256 {got}, not the pinned {pinned.lower()} "
                                 f"(sparse_retrieval.teacher.sha256): another version of the file, or a damaged one; "
                                 f"delete it so that it is fetched again, or pin the file you mean to use")
    return got


def fetch_teacher_scores(teacher: Mapping[str, Any], output: str) -> dict:
    """The ``teacher_scores`` rule: the file at ``teacher['scores']`` (a URL) downloaded to ``output``, renamed into
    place only when complete and matching the pin; its sha256 is returned (recorded)."""
    source = teacher["scores"]
    try:
        with urllib.request.urlopen(source, timeout=60) as response, atomic_write(output, "wb") as handle:
            shutil.copyfileobj(response, handle, 1 << 20)
            handle.flush()
            got = check_pinned(handle.name, teacher.get("sha256"))
    except OSError as problem:
        raise TeacherScoresError(f"could not download {source} ({problem}). Download it where the internet can be "
                                 f"reached and set sparse_retrieval.teacher.scores to the file's path") from None
    return {"sha256": got, "pinned": bool(teacher.get("sha256"))}


def write_teacher_run(scores_path: str, pinned: str | None, folds_path: str, output: str) -> dict:
    """The ``splade_teacher`` rule: the scores of the dataset's training queries (every split's but test) as a
    run, from the teacher's file (checked against its pin: a file placed by hand, or named by path, is never
    downloaded); returns the file's sha256 and how many queries and scored documents it kept."""
    if not Path(scores_path).is_file():
        raise TeacherScoresError(f"sparse_retrieval.teacher.scores = {scores_path!r}: no such file")
    got = check_pinned(scores_path, pinned)
    doc = folds.read_folds(folds_path)
    test = set(folds.test_queries(doc))
    scores = read_scores(scores_path)
    kept = {qid: docs for qid, docs in scores.items() if qid not in test and docs}
    if not kept:
        raise TeacherScoresError(f"{scores_path}: no scores for the training queries of {folds_path}")
    trec.write_run(output, kept, "teacher")
    return {"sha256": got, "pinned": bool(pinned), "queries": len(kept),
            "scored": sum(len(docs) for docs in kept.values()), "left_out_test": len(test)}

"""A cross-encoder's scores for MarginMSE distillation (Table 2), as a TREC run the training job reads.

The paper distils from ``cross-encoder/ms-marco-MiniLM-L-6-v2``'s scores of MS MARCO's hard negatives, the file
the released code reads (``cross-encoder-ms-marco-MiniLM-L-6-v2-scores.pkl.gz`` of sentence-transformers'
``msmarco-hard-negatives``: a pickled ``{qid: {pid: score}}`` of integers and floats). It is read with an
unpickler that builds nothing but those (a pickle from the internet can run code otherwise), kept for the
dataset's training queries only, and written as a run: each query's scored documents (relevant ones included,
which MarginMSE needs as positives) by score.
"""
from __future__ import annotations

import gzip
import pickle
import shutil
import tempfile
import urllib.request
from pathlib import Path

from ..data import folds, trec
from ..errors import ActionableError


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


def fetched(source: str, directory: Path) -> Path:
    """``source`` itself when it is a file here, else downloaded into ``directory`` (the job's output's own)."""
    if "://" not in source:
        if not Path(source).is_file():
            raise TeacherScoresError(f"sparse_retrieval.teacher.scores = {source!r}: no such file")
        return Path(source)
    target = directory / Path(source.split("?")[0]).name
    try:
        with urllib.request.urlopen(source, timeout=60) as response, open(target, "wb") as handle:
            shutil.copyfileobj(response, handle)
    except OSError as problem:
        raise TeacherScoresError(f"could not download {source} ({problem}). Download it where the internet can be "
                                 f"reached and set sparse_retrieval.teacher.scores to the file's path") from None
    return target


def write_teacher_run(source: str, folds_path: str, output: str) -> dict:
    """The ``splade_teacher`` rule: the scores of the dataset's training queries (every split's but test) as a
    run; returns how many queries and scored documents it kept."""
    doc = folds.read_folds(folds_path)
    test = set(folds.test_queries(doc))
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(output).parent, prefix=".teacher.") as directory:
        scores = read_scores(fetched(source, Path(directory)))
    kept = {qid: docs for qid, docs in scores.items() if qid not in test and docs}
    if not kept:
        raise TeacherScoresError(f"{source}: no scores for the training queries of {folds_path}")
    trec.write_run(output, kept, "teacher")
    return {"queries": len(kept), "scored": sum(len(docs) for docs in kept.values()), "left_out_test": len(test)}

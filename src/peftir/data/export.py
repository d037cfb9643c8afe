"""Export an ir_datasets collection to plain files that every later stage reads.

Exporting once decouples the workflow from ir_datasets' caches and lazy
downloads: Anserini indexes the documents (JsonCollection format), the rankers
read the queries and qrels, and ``info.json`` (written last) records what was
exported so an interrupted export never looks complete.

Licensed corpora (TREC disks 4 & 5, ClueWeb09) cannot be downloaded; for them
:func:`check_available` looks for the source files where ir_datasets expects
them and :class:`MissingDataError` says what to obtain and where to put it.
``ir_datasets`` is imported lazily: it binds its data paths to
``IR_DATASETS_HOME`` when first imported, so the variable must be set before.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..errors import ActionableError
from .. import progress_log
from ..files import atomic_write
from . import empty_documents, split_queries
from .docstore import lookup_writer
from .sizes import quietly
from .trec import MalformedFileError, Qrels, check_id, write_qrels, write_topics


class MissingDataError(ActionableError):
    """The source files of a licensed collection are not where ir_datasets looks for them."""


def normalise(text: str) -> str:
    """Collapse whitespace (newlines would break TSV/JSON-lines consumers); keep case."""
    return " ".join(text.split())


def _load(irds_id: str) -> Any:
    import ir_datasets  # lazy: binds IR_DATASETS_HOME at import time

    return ir_datasets.load(irds_id)


def docs_source_path(irds_id: str) -> Path:
    """Where ir_datasets reads the collection's source documents, without touching the network.

    ``docs_path(force=False)`` is the path the docs handler (TrecDocs for disks45,
    ClueWeb09Docs for clueweb09, ...) reads, e.g. ``$IR_DATASETS_HOME/disks45/corpus``.
    """
    return Path(_load(irds_id).docs_handler().docs_path(force=False))


def _present(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def check_available(spec: Mapping[str, Any]) -> str | None:
    """Return why the collection's documents are unavailable, with ir_datasets' own instructions where it has some
    (ClueWeb09's hard drives, what the directory holds), or None if they are present."""
    path = docs_source_path(spec["irds"])
    if _present(path):
        return None
    with quietly() as notices:               # asking for the files makes ir_datasets say how to get them
        try:
            _load(spec["irds"]).docs_handler().docs_path(force=True)
        except Exception:
            pass
    licence = spec.get("licence", "the collection's source files")
    if notices:                              # they name the path and what it should hold
        said = "\n".join(dict.fromkeys(notices))
        return (f"{spec['irds']}: document collection not found. Obtain {licence}; ir_datasets says how and where "
                f"(the location follows IR_DATASETS_HOME, default ~/.ir_datasets):\n{said}")
    return (f"{spec['irds']}: document collection not found. Obtain {licence} and copy or "
            f"symlink its source files to {path} (where ir_datasets expects them; the "
            f"location follows IR_DATASETS_HOME, default ~/.ir_datasets).")


DEFAULT_TEXT = "default_text"   # a "field" naming ir_datasets' own text of a record (HTML parsed, for WARC)


def _fields(record: Any, names: Iterable[str], kind: str) -> list[str]:
    """The requested fields of a record as text, failing with the available names if one is wrong.
    ``default_text`` is ir_datasets' ``record.default_text()``: for web pages (ClueWeb09's WARC
    records, whose ``body`` is raw bytes) the title and body text of the parsed HTML."""
    names = list(names)
    missing = [name for name in names if name not in record._fields and name != DEFAULT_TEXT]
    if missing:
        raise KeyError(f"{kind} field(s) {missing} not in {record._fields} (or {DEFAULT_TEXT})")
    values = [record.default_text() if name == DEFAULT_TEXT else getattr(record, name) or "" for name in names]
    for name, value in zip(names, values):
        if not isinstance(value, str):
            raise ActionableError(f"{kind} field {name!r} is {type(value).__name__}, not text: name "
                                  f"{DEFAULT_TEXT} (ir_datasets' text of the record) in the dataset's config instead")
    return values


def _documents(dataset: Any, spec: Mapping[str, Any]) -> Iterator[Any]:
    """The collection's documents. Reading a licensed collection the user copied, ir_datasets' complaint
    that the copy is incomplete or laid out otherwise (it checks, e.g., the 2,295 files of disks 4 & 5)
    becomes one message saying where and what, instead of a traceback."""
    try:
        yield from dataset.docs_iter()
    except (RuntimeError, OSError) as problem:
        if not spec.get("licence"):
            raise
        raise MissingDataError(f"{spec['irds']}: the copy of {spec['licence']} at {docs_source_path(spec['irds'])} "
                               f"cannot be read as ir_datasets expects it: {problem}") from None


def _write_docs(dataset: Any, spec: Mapping[str, Any], path: Path, lookup: Path,
                empty: Path | None) -> tuple[int, int]:
    """Documents as JSON lines, the lookup from each id to its line (``peftir.data.docstore``), and the ids of the
    documents with no text (``peftir.data.empty_documents``) in ``empty`` when given; returns how many documents,
    and how many empty."""
    count = offset = 0
    no_text: list[str] = []
    doc_fields = list(spec["doc_fields"])
    progress_log.start("exporting the documents", dataset.docs_count, "documents")
    with atomic_write(path, "wb") as handle, lookup_writer(lookup, path) as places:
        for doc in _documents(dataset, spec):
            check_id("document", doc.doc_id, dataset.dataset_id())
            text = normalise(" ".join(_fields(doc, doc_fields, "document")))
            if empty_documents.is_empty(text):
                no_text.append(doc.doc_id)
            line = (json.dumps({"id": doc.doc_id, "contents": text}) + "\n").encode()
            handle.write(line)
            places.add(doc.doc_id, offset, len(line))
            offset += len(line)
            count += 1
            progress_log.advance("exporting the documents")
    progress_log.finish("exporting the documents")
    if empty is not None:
        empty_documents.write_list(empty, no_text)
    if no_text:
        listed = f"listed in {empty}, " if empty is not None else ""
        print(f"{spec.get('irds', path)}: {len(no_text):,} of {count:,} documents have no text in {doc_fields} "
              f"({listed}e.g. {no_text[:3]}): BM25 cannot retrieve them; dense and SPLADE indexes encode them from "
              f"their special tokens alone", file=sys.stderr)
    return count, len(no_text)


def _query_sources(spec: Mapping[str, Any]) -> list[str]:
    """Where queries and qrels come from: pre-assigned splits, the ``topics`` subsets (e.g. four years of
    a TREC track over one corpus), or the dataset itself."""
    if spec.get("splits"):
        return list(spec["splits"].values())
    return list(spec.get("topics") or [spec["irds"]])


def queries_and_qrels(spec: Mapping[str, Any]) -> tuple[dict[str, str], Qrels]:
    """Every query of the dataset's sources (its text in the configured field) and their judgements; a split's
    ids prefixed where splits number their queries independently (``peftir.data.split_queries``)."""
    topics: dict[str, str] = {}
    qrels: Qrels = {}
    prefixed = split_queries.prefixes(spec)
    for irds_id in _query_sources(spec):
        dataset = _load(irds_id)
        for query in dataset.queries_iter():
            check_id("query", query.query_id, irds_id)
            qid = split_queries.query_id(prefixed, irds_id, query.query_id)
            topics[qid] = normalise(_fields(query, [spec["query_field"]], "query")[0])
            if not topics[qid]:
                raise MalformedFileError(f"{irds_id}: query {query.query_id} has no text in its field "
                                         f"{spec['query_field']!r}; choose another datasets.<name>.query_field")
        if dataset.has_qrels():
            for qrel in dataset.qrels_iter():
                qrels.setdefault(split_queries.query_id(prefixed, irds_id, qrel.query_id), {})[qrel.doc_id] = \
                    qrel.relevance
    return topics, qrels


def export_dataset(spec: Mapping[str, Any], docs: str | Path, lookup: str | Path, empty: str | Path | None,
                   queries: str | Path, qrels: str | Path, info: str | Path) -> dict[str, Any]:
    """The ``download`` rule: documents (JSON lines, Anserini's JsonCollection) and their ``lookup`` by id, the ids
    of those with no text (``empty``, one a line; None: not listed), queries (TSV), qrels and, last, ``info`` (what
    was exported: counts, the empty documents among them, fields, splits)."""
    if spec.get("licence"):
        message = check_available(spec)
        if message:
            raise MissingDataError(message)
    n_docs, n_empty = _write_docs(_load(spec["irds"]), spec, Path(docs), Path(lookup),
                                  None if empty is None else Path(empty))
    topics, judgments = queries_and_qrels(spec)
    write_topics(queries, topics)
    write_qrels(qrels, judgments)
    exported = {
        "irds": spec["irds"],
        "splits": dict(spec.get("splits") or {}),
        "topics": list(spec.get("topics") or []),
        "query_field": spec["query_field"],
        "doc_fields": list(spec["doc_fields"]),
        "docs": n_docs,
        "empty_docs": n_empty,                  # no text: not in the BM25 index (Anserini counts them "empty")
        **({"empty_docs_list": str(empty)} if empty is not None else {}),
        "queries": len(topics),
        "qrels": sum(len(judged) for judged in judgments.values()),
        "queries_with_qrels": len(judgments),
    }
    with atomic_write(info) as handle:
        json.dump(exported, handle, indent=2)
        handle.write("\n")
    return exported


def export_answers(spec: Mapping[str, Any], output: str | Path) -> int:
    """The ``export_answers`` rule: every question's answer strings (ir_datasets' ``answers`` field of the
    queries of the dataset's sources, ids as the export writes them), one JSON object per line, for judging runs by
    answer matching (``datasets.<name>.answers``: ``peftir.evaluation.answers``). Returns the questions written."""
    prefixed = split_queries.prefixes(spec)
    count = 0
    with atomic_write(output) as handle:
        for irds_id in _query_sources(spec):
            dataset = _load(irds_id)
            if "answers" not in dataset.queries_cls()._fields:
                raise ActionableError(f"{irds_id}: its queries have no answers ({dataset.queries_cls()._fields}); "
                                      f"datasets.<name>.answers needs questions with answers (dpr-w100's splits)")
            for query in dataset.queries_iter():
                qid = split_queries.query_id(prefixed, irds_id, query.query_id)
                handle.write(json.dumps({"id": qid, "answers": list(query.answers)}, ensure_ascii=False) + "\n")
                count += 1
    return count

"""Looking documents up by id in the exported collection, or reading it a window at a time, without reading the
collection into memory.

The export writes the documents once, as Anserini's JSON lines (``docs.jsonl``), and beside them a
lookup: an SQLite table from each document id to the byte offset and length of its line. A job reads
only the lines of the documents it scores (a seek and a read each), so its memory follows the
candidates and training triples it uses, not the collection: 8.8 M MS MARCO passages cost a training
job the same as 11 k Vaswani abstracts. The lookup is built while the documents are written (one
pass, constant memory); a document id that occurs twice is an error naming both lines.
"""
from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from ..files import atomic_path
from .trec import MalformedFileError

BATCH = 900           # ids per SELECT: below SQLite's default limit of host parameters
WINDOW = 100_000      # documents per window when a job encodes a whole collection (a dense index's shard)


class LookupWriter:
    """Collects (id, offset, length) of each document line as the export writes it."""

    def __init__(self, connection: sqlite3.Connection, docs: str | os.PathLike) -> None:
        self._connection, self._docs = connection, docs
        self._pending: list[tuple[str, int, int]] = []
        self._lines = 0

    def add(self, docid: str, offset: int, length: int) -> None:
        self._lines += 1
        self._pending.append((docid, offset, length))
        if len(self._pending) >= 10_000:
            self.flush()

    def flush(self) -> None:
        inserted = self._connection.executemany("INSERT OR IGNORE INTO docs VALUES (?, ?, ?)", self._pending).rowcount
        if inserted != len(self._pending):
            self._duplicate()
        self._pending = []

    def _duplicate(self) -> None:
        """Name the first line of the batch whose id was already taken by an earlier line."""
        first = self._lines - len(self._pending) + 1
        for line, (docid, offset, _) in enumerate(self._pending, start=first):
            (stored,) = self._connection.execute("SELECT offset FROM docs WHERE id = ?", (docid,)).fetchone()
            if stored != offset:
                raise MalformedFileError(f"{self._docs}, line {line}: document id {docid!r} occurs twice in the "
                                         f"collection (also at byte {stored}); ids must be unique")


@contextmanager
def lookup_writer(path: str | os.PathLike, docs: str | os.PathLike) -> Iterator[LookupWriter]:
    """Build the lookup of ``docs`` at ``path`` (written beside it and renamed into place when complete)."""
    with atomic_path(path) as building:
        connection = sqlite3.connect(building)
        try:
            connection.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
                                     "CREATE TABLE docs (id TEXT PRIMARY KEY, offset INTEGER NOT NULL, "
                                     "length INTEGER NOT NULL) WITHOUT ROWID;")
            with connection:
                writer = LookupWriter(connection, docs)
                yield writer
                writer.flush()
        finally:
            connection.close()
        with open(building, "rb") as handle:
            os.fsync(handle.fileno())


class DocStore:
    """Texts of documents by id: the lookup gives each line's place in ``docs.jsonl``, read on demand."""

    def __init__(self, docs: str | os.PathLike, lookup: str | os.PathLike) -> None:
        self.docs, self.lookup = Path(docs), Path(lookup)
        # read-only and immutable: no locks, so many jobs (and network file systems) share one file safely
        self._db = sqlite3.connect(f"file:{self.lookup}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self._file = open(self.docs, "rb")

    def _places(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        places: dict[str, tuple[int, int]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), BATCH):
            chunk = unique[start:start + BATCH]
            query = f"SELECT id, offset, length FROM docs WHERE id IN ({','.join('?' * len(chunk))})"
            places.update((docid, (offset, length)) for docid, offset, length in self._db.execute(query, chunk))
        return places

    @staticmethod
    def _absent(ids: Sequence[str], places: dict[str, tuple[int, int]]) -> list[str]:
        return [docid for docid in dict.fromkeys(ids) if docid not in places]

    def missing(self, ids: Sequence[str]) -> list[str]:
        """The ids of ``ids`` that are not documents of the collection."""
        return self._absent(ids, self._places(ids))

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The texts of ``ids``; an id the collection lacks (a run or triple from another collection), or a
        line that is not the document the lookup promises, is an error naming the file."""
        places = self._places(ids)
        missing = self._absent(ids, places)
        if missing:
            raise MalformedFileError(f"{self.docs}: {len(missing)} documents are not in the collection "
                                     f"(e.g. {missing[:5]}): the run or triples come from another collection")
        return {docid: self._read(docid, *places[docid]) for docid in places}

    def _read(self, docid: str, offset: int, length: int) -> str:
        self._file.seek(offset)
        line = self._file.read(length)
        try:
            doc = json.loads(line)
            if doc["id"] == docid:
                return doc["contents"]
        except (ValueError, KeyError, TypeError):
            pass
        raise MalformedFileError(f"{self.docs}, byte {offset}: not the line of document {docid!r} that "
                                 f"{self.lookup} points to: the two files do not belong together")

    def close(self) -> None:
        self._db.close()
        self._file.close()

    def __enter__(self) -> DocStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def document_windows(docs: str, size: int = WINDOW) -> Iterator[tuple[list[str], list[str]]]:
    """A collection's document ids and texts, ``size`` documents at a time, in file order (``docs.jsonl``: id,
    contents): what one shard of an index encodes, so no job holds a whole collection's texts."""
    ids, texts = [], []
    with open(docs, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                document = json.loads(line)
                ids.append(document["id"])
                texts.append(document["contents"])
            except (ValueError, KeyError) as problem:
                raise ValueError(f"{docs}:{number}: not a document line ({problem})") from None
            if len(ids) == size:
                yield ids, texts
                ids, texts = [], []
    if ids:
        yield ids, texts

"""Documents with no text: what a collection exports as an empty ``contents``, and the list kept beside it.

Real collections have them: ClueWeb09 pages whose text extraction is empty, MS MARCO documents with an empty body,
TREC disks 4 & 5 records without ``TEXT``, Cranfield's documents 471 and 995. Anserini does not index a document
whose ``contents`` is empty after Java's ``String.trim()`` (which strips every character up to U+0020, control
characters included, and nothing above it); it counts it as ``empty`` instead. ``is_empty`` is that same test, so
the export's count and Anserini's agree exactly and the index step can reconcile the two
(``peftir.retrieval.anserini``).

What a table loses by them: an empty document cannot be retrieved by BM25, so it never enters a BM25-reranked pool;
a dense index still encodes it (from its special tokens alone, ``[CLS] [SEP]``) and may retrieve it; SPLADE encodes
it too and retrieves it only where that encoding keeps a piece (docs/configuration/index.md, "Empty documents").
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from ..files import atomic_write

JAVA_TRIMMED = "".join(map(chr, range(0x21)))   # what String.trim() removes: U+0000 to U+0020


def is_empty(text: str) -> bool:
    """Whether Anserini sees no text in ``text`` (nothing left after Java's ``trim``)."""
    return not text.strip(JAVA_TRIMMED)


def write_list(path: str | os.PathLike, ids: Iterable[str]) -> None:
    """The ids of a collection's empty documents, one a line, in collection order (atomically; empty file: none)."""
    with atomic_write(path) as handle:
        handle.writelines(f"{doc_id}\n" for doc_id in ids)


def read_list(path: str | os.PathLike) -> list[str]:
    """The ids ``write_list`` wrote."""
    return Path(path).read_text(encoding="utf-8").split()


def scan(docs: str | os.PathLike) -> tuple[int, list[str]]:
    """A JSON-lines collection's document count and the ids of its empty documents, read in one pass (for collections
    the export did not write: the modular CLIR system's per-language files)."""
    count, empty = 0, []
    with open(docs, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
                doc_id, text = str(document["id"]), str(document["contents"])
            except (ValueError, KeyError, TypeError) as problem:
                raise ValueError(f"{docs}:{number}: not a document line ({problem})") from None
            count += 1
            if is_empty(text):
                empty.append(doc_id)
    return count, empty

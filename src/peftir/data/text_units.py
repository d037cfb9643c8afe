"""Text units of a file, whatever it holds: a collection's documents, a topics file's queries, plain lines.

What MLM, pretraining and the vocabulary trimming read, streamed: a corpus of billions of tokens is never held
whole, only ``ENCODE_CHUNK`` units at a time for a tokenizer's batch call. A unit with no text (an empty document of
a real collection, a blank line) is left out and counted (``TextUnits.empty``), so a job can say what it dropped.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

from .empty_documents import is_empty

ENCODE_CHUNK = 4096                   # units tokenised per batch call: bounded memory on any corpus size


def _texts(path: Path) -> Iterator[str]:
    """Every unit's text as the file holds it: a JSON-lines document's ``contents`` (a blank line holds no
    document), a TSV row's second column (``id<TAB>text``), or a plain file's line."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if path.suffix == ".jsonl":
                if line.strip():
                    yield json.loads(line)["contents"]
            elif path.suffix == ".tsv":
                if line.strip():
                    columns = line.rstrip("\n").split("\t")
                    if len(columns) < 2:
                        raise ValueError(f"{path}:{number}: not id<TAB>text")
                    yield columns[1]
            else:
                yield line


class TextUnits:
    """The non-empty text units of ``paths``, in order, each stripped; ``empty`` counts those left out for holding no
    text once they have been read: nothing Anserini would index (``peftir.data.empty_documents.is_empty``) or
    nothing but whitespace to Python (a no-break space, which the export's normalising already turns into an empty
    document, so on an exported collection the two counts agree). Iterable more than once."""

    def __init__(self, paths: Iterable[str | Path]) -> None:
        self.paths = [Path(path) for path in paths]
        self.empty = 0

    def __iter__(self) -> Iterator[str]:
        self.empty = 0
        for path in self.paths:
            for text in _texts(path):
                if is_empty(text) or not text.strip():
                    self.empty += 1
                else:
                    yield text.strip()

    def chunks(self) -> Iterator[list[str]]:
        """The units in lists of ``ENCODE_CHUNK``, for the tokenizers' batch calls."""
        chunk: list[str] = []
        for unit in self:
            chunk.append(unit)
            if len(chunk) == ENCODE_CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def text_units(path: str | Path) -> Iterator[str]:
    """The non-empty text units of one file (``TextUnits``)."""
    return iter(TextUnits([path]))


def unit_chunks(paths: Iterable[str | Path]) -> Iterator[list[str]]:
    """The files' non-empty text units in lists of ``ENCODE_CHUNK`` (``TextUnits.chunks``)."""
    return TextUnits(paths).chunks()

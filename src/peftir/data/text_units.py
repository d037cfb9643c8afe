"""Text units of a file, whatever it holds: a collection's documents, a topics file's queries, plain lines.

What MLM, pretraining and the vocabulary trimming read, streamed: a corpus of billions of tokens is never held
whole, only ``ENCODE_CHUNK`` units at a time for a tokenizer's batch call.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

ENCODE_CHUNK = 4096                   # units tokenised per batch call: bounded memory on any corpus size


def text_units(path: str | Path) -> Iterator[str]:
    """The non-empty text units of a file: a JSON-lines document collection's ``contents``, a TSV topics file's
    second column (``id<TAB>text``), or a plain file's lines."""
    path = Path(path)
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if path.suffix == ".jsonl":
                text = json.loads(line)["contents"]
            elif path.suffix == ".tsv":
                columns = line.rstrip("\n").split("\t")
                if len(columns) < 2:
                    raise ValueError(f"{path}:{number}: not id<TAB>text")
                text = columns[1]
            else:
                text = line
            if text.strip():
                yield text.strip()


def unit_chunks(paths: Iterable[str | Path]) -> Iterator[list[str]]:
    """The files' text units in lists of ``ENCODE_CHUNK``, for the tokenizers' batch calls."""
    chunk: list[str] = []
    for path in paths:
        for unit in text_units(path):
            chunk.append(unit)
            if len(chunk) == ENCODE_CHUNK:
                yield chunk
                chunk = []
    if chunk:
        yield chunk

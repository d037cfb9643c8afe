"""A collection's queries and qrels exported again from ir_datasets, only from the files already on this machine:
what ``peftir audit`` compares with the ones a result was computed against, so that queries or qrels edited in a
results folder or a crate (with every hash recomputed to match) are caught where the reviewer has the collection.

Offline on purpose: ir_datasets downloads whatever its cache lacks, so every download it would start is refused
while the export runs (a ``Download`` whose cached file is missing, or that streams its source, ends the export);
the caller then says the collection is not here rather than fetching it.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from .export import queries_and_qrels
from .trec import write_qrels, write_topics


class NotOnThisMachine(Exception):
    """ir_datasets would have to download a file to export the queries or qrels."""


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """ir_datasets reads only what its cache holds while the block runs; a download raises ``NotOnThisMachine``."""
    from ir_datasets.util import download

    path, stream = download.Download.path, download.Download.stream

    def cached(self, force: bool = True) -> str:
        where = self._cache_path          # None: a file ir_datasets fetches into a temporary file every time
        if where is None or not os.path.exists(where):
            raise NotOnThisMachine(f"{where or 'an uncached download'} is not in the ir_datasets cache")
        return path(self, force=force)

    def streamed(self):
        if self._stream:
            raise NotOnThisMachine("a streamed source would be downloaded")
        return stream(self)

    download.Download.path, download.Download.stream = cached, streamed
    try:
        yield
    finally:
        download.Download.path, download.Download.stream = path, stream


def reexport(spec: Mapping[str, Any], directory: str | Path) -> dict[str, Path]:
    """The queries and qrels of the dataset ``spec`` (a ``download`` job's ``export`` param) written into
    ``directory`` as the export writes them; ``NotOnThisMachine`` where ir_datasets would have to download."""
    directory = Path(directory)
    with offline():
        topics, judgments = queries_and_qrels(spec)
    written = {"queries": directory / "queries.tsv", "qrels": directory / "qrels.txt"}
    write_topics(written["queries"], topics)
    write_qrels(written["qrels"], judgments)
    return written

"""How many documents and queries an ir_datasets id holds, from ir_datasets' metadata: known before any job (the
cost plan sizes jobs by it, the configuration check bounds folds and samples by it) without downloading anything.

Quietly: reading a licensed collection's metadata makes ir_datasets log how to obtain its files (ClueWeb09's hard
drives, TREC disks 4 and 5) whether or not a job will read them. The pipeline says that itself, once, for a collection
a planned job needs (``peftir.data.export.check_available``, from the ``download`` rule).
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from functools import cache
from typing import Iterator


class _Held(logging.Filter):
    """Keeps the messages of the records it stops."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.messages.append(record.getMessage())
        return False


@contextmanager
def quietly() -> Iterator[list[str]]:
    """ir_datasets' notices held back, and handed over as a list (every module of it logs through the logger
    ``ir_datasets``, which prints on a handler of its own)."""
    held, logger = _Held(), logging.getLogger("ir_datasets")
    logger.addFilter(held)
    try:
        yield held.messages
    finally:
        logger.removeFilter(held)


def _load(irds: str):
    import ir_datasets

    return ir_datasets.load(irds)


@cache
def document_count(irds: str) -> int:
    """Documents of an ir_datasets id, from its metadata (no download); 0 where unknown."""
    with quietly():
        try:
            return _load(irds).docs_count() or 0
        except Exception:          # a dataset without metadata: its size is known once it is downloaded
            return 0


@cache
def query_count(irds: str) -> int:
    """Queries of an ir_datasets id, from its metadata, without touching its documents; 0 where unknown."""
    with quietly():
        try:
            dataset = _load(irds)
            return (dataset.queries_count() or 0) if dataset.has_queries() else 0
        except Exception:
            return 0


def collection_size(irds: str) -> tuple[int, int]:
    """Documents and queries of an ir_datasets id (``document_count``, ``query_count``)."""
    return document_count(irds), query_count(irds)

"""How many documents and queries an ir_datasets id holds, from ir_datasets' metadata: known before any job (the
cost plan sizes jobs by it, the configuration check bounds folds and samples by it) without downloading anything."""
from __future__ import annotations

from functools import cache


@cache
def collection_size(irds: str) -> tuple[int, int]:
    """Documents and queries of an ir_datasets id, from its metadata (no download); 0 where unknown."""
    import ir_datasets

    dataset = ir_datasets.load(irds)
    try:
        return dataset.docs_count() or 0, (dataset.queries_count() or 0) if dataset.has_queries() else 0
    except Exception:          # a dataset without metadata: its size is known once it is downloaded
        return 0, 0

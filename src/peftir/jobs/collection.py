"""Job of the `download` rule: export an ir_datasets collection to plain files."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import collections
from ..runner import Job


def export(job: Job) -> None:
    """ir_datasets collection → docs.jsonl, queries.tsv, qrels.txt, info.json; licensed data missing → instructions."""
    try:
        collections.export_dataset(job.params["spec"], Path(job.output["info"]).parent)
    except collections.MissingDataError as missing:
        sys.exit(str(missing))

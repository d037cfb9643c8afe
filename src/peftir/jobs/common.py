"""What several job modules share: the fold rotation a job's wildcards name."""
from __future__ import annotations

import json
from pathlib import Path

from .. import folds
from ..runner import Job


def fold_split(job: Job) -> dict[str, list[str]]:
    """Train / valid / test query ids of the job's ``fold`` wildcard."""
    return folds.rotation(json.loads(Path(job.input["folds"]).read_text()), job.wildcards["fold"])

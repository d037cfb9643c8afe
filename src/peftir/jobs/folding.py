"""Job of the `folds` rule: the dataset's cross-validation folds."""
from __future__ import annotations

from .. import folds, trec
from ..runner import Job


def make_folds(job: Job) -> None:
    qids = list(trec.read_topics(job.input["queries"]))
    folds.write_folds(job.output["folds"], folds.make_folds(job.wildcards["dataset"], job.params["spec"], qids))

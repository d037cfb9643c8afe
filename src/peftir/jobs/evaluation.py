"""Job of the evaluation rules: per-query and mean metrics of a run with pytrec_eval."""
from __future__ import annotations

from .. import evaluation
from ..runner import Job


def evaluate(job: Job) -> None:
    """Per-query and mean metrics of a run on the test queries of one fold."""
    summary = evaluation.evaluate_fold(job.input["run"], job.input["qrels"], job.input["folds"], job.wildcards["fold"],
                                       job.params["metrics"], job.params.get("depth"))
    evaluation.write_metrics(job.output["metrics"], summary,
                             extra={"run": job.input["run"], "qrels": job.input["qrels"], **job.wildcards})

"""Job of the evaluation rules: per-query and mean metrics of a run with pytrec_eval."""
from __future__ import annotations

from .. import evaluation, trec
from ..runner import Job
from .common import fold_split


def evaluate(job: Job) -> None:
    """Per-query and mean metrics of a run on the test queries of one fold."""
    metrics = job.params["metrics"]
    test = fold_split(job)["test"]
    run = trec.read_run(job.input["run"])
    if "depth" in job.params:   # BM25 as a reference row: cut at the depth the rerankers see
        run = trec.truncate_run(run, job.params["depth"])
    per_query = evaluation.evaluate_run(run, trec.read_qrels(job.input["qrels"]), metrics, test)
    evaluation.write_metrics(job.output["metrics"], evaluation.metric_summary(per_query, metrics),
                             extra={"run": job.input["run"], "qrels": job.input["qrels"], **job.wildcards})

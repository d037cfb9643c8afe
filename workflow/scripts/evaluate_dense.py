"""Rules `evaluate_dense`, `evaluate_dense_untrained`, `evaluate_dense_bm25`: a run's per-query and mean metrics
on a fold's test queries, at the run's own depth."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.evaluation.metrics import measure_fold

    measure_fold(smk.input.run, smk.input.qrels, smk.input.folds, smk.wildcards.fold, smk.params.dense_metrics,
                 None, smk.output.metrics, about=dict(smk.wildcards.items()))

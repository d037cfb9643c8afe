"""Rules `evaluate_toy_rm3` and `evaluate_toy_bm25`: a run's per-query and mean metrics on a fold's test queries, by
the workflow's evaluation (its `toy_rm3_metrics` param is the evaluation's `metrics`, as the audit reads it too)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.evaluation.metrics import measure_run

    measure_run(smk.input.run, smk.input.qrels, smk.input.folds, smk.wildcards.fold,
                {"metrics": smk.params.toy_rm3_metrics}, smk.output.metrics, about=dict(smk.wildcards.items()))

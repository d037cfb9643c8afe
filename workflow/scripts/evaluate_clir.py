"""Rules `evaluate_clir` and `evaluate_clir_prerank`: a run's per-query and mean metric on the test queries."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.evaluation.metrics import measure_fold

    measure_fold(smk.input.run, smk.input.qrels, smk.input.folds, smk.wildcards.fold, smk.params.clir_metric, None,
                 smk.output.metrics, about=dict(smk.wildcards.items()))

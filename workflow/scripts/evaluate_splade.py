"""Rules `evaluate_splade`, `evaluate_splade_bm25`: a run's per-query and mean metrics on the collection's test
queries, with R-FLOPS for a SPLADE run."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.sparse.evaluation import measure_splade

    measure_splade(smk.input.run, smk.input.qrels, smk.input.folds, smk.wildcards.fold, smk.input.get("flops"),
                   smk.params.splade_evaluation, smk.output.metrics, about=dict(smk.wildcards.items()))

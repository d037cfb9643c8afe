"""Rule `evaluate_dense_target`: a dense run of another dataset's queries (TREC DL 2019 in MS MARCO's documents),
its per-query and mean metrics on every test query of that dataset."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.sparse.evaluation import measure_splade

    measure_splade(smk.input.run, smk.input.qrels, smk.input.folds, smk.wildcards.fold, None,
                   smk.params.dense_evaluation, smk.output.metrics, about=dict(smk.wildcards.items()))

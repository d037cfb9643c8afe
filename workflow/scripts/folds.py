"""Rule `folds`: the dataset's queries assigned to cross-validation folds (or pre-assigned splits)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.data.folds import assign_folds

    assign_folds(smk.wildcards.dataset, smk.params.folds, smk.input.queries, smk.output.folds)

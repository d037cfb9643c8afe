"""Rule `splade_table`: one table of the Adapters-SPLADE paper (LaTeX, JSON twin, CSV) from its runs' metrics."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.reports.dense import make_dense_table

    make_dense_table(smk.params.splade_table, list(smk.input.metrics), list(smk.input.summaries), smk.output.tex,
                     smk.output.json, smk.output.csv)

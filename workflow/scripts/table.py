"""Rule `table`: one result table (LaTeX, JSON, CSV) from its runs' metrics and the reference systems'."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.semi_siamese.tables import make_table

    make_table(smk.params.table, list(smk.input.metrics), list(smk.input.summaries), list(smk.input.reference),
               smk.output.tex, smk.output.json, smk.output.csv)

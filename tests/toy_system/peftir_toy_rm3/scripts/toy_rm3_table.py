"""Rule `toy_rm3_table`: BM25 vs BM25 + RM3 (LaTeX, JSON twin, CSV) from their metrics files."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir_toy_rm3.table import make_table

    make_table(smk.params.toy_rm3_table, list(smk.input.metrics), smk.output.tex, smk.output.json, smk.output.csv)

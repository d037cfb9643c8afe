"""Rule `clir_table`: one modular CLIR table (LaTeX, JSON, CSV) from its runs' metrics and the pre-ranker's."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.reports import make_clir_table

    make_clir_table(smk.params.clir_table, list(smk.input.metrics), list(smk.input.prerank),
                    list(smk.input.summaries), smk.output.tex, smk.output.json, smk.output.csv,
                    translated=list(smk.input.get("translated", [])))

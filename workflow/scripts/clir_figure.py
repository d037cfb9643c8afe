"""Rule `clir_figure`: MAP against the ranking modules' reduction factor (PDF, PNG, JSON)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.reports import make_clir_figure

    make_clir_figure(smk.params.clir_figure, list(smk.input.metrics), list(smk.input.prerank),
                     list(smk.input.summaries), smk.output.pdf, smk.output.png, smk.output.json)

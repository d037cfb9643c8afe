"""Rule `figure`: one figure (PDF, PNG, JSON) from its runs' metrics."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.reports.figures import make_figure

    make_figure(smk.params.figure, list(smk.input.metrics), list(smk.input.summaries), smk.output.pdf,
                smk.output.png, smk.output.json)

"""Rule `scorecard`: a table against what its paper printed (LaTeX, JSON, CSV and the ER-vs-ΔRI figure)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.reports.scorecard import make_scorecard

    make_scorecard(smk.input.table, smk.params.reported[0], smk.wildcards.report, smk.params.reproduction,
                   smk.output.tex, smk.output.json, smk.output.csv, smk.output.pdf, smk.output.png)

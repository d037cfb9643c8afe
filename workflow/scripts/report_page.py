"""Rule `report_page`: every table with its scorecard and significance companion, and the figures, on one page."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.app.report_page import make_report_page

    make_report_page(list(smk.input.tables), list(smk.input.scorecards), list(smk.input.scorecard_figures),
                     list(smk.input.significance), list(smk.input.figures), smk.params.reported,
                     smk.params.budget, smk.output.page)

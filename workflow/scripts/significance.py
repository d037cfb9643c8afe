"""Rule `significance`: a table's comparisons tested on per-query scores and corrected over its family, beside the
paper's own marks."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.reports.significance_tables import make_significance

    make_significance(smk.input.table, smk.wildcards.report, smk.params.significance, smk.params.reported[0],
                      smk.params.stand_ins, smk.output.tex, smk.output.json, smk.output.csv)

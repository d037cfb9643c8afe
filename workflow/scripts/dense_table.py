"""Rules `dense_table` and `splade_table`: one table of a dense retrieval paper or of the Adapters-SPLADE paper
(LaTeX, JSON twin, CSV) from its runs' metrics; its layout comes in the `retrieval_table` param."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.pipeline.contract import PATHS
    from peftir.reports.retrieval_tables import make_dense_table

    (layout,) = smk.params.retrieval_table.values()  # dense_table's or splade_table's (peftir.pipeline.contract)
    make_dense_table(layout, list(smk.input.metrics), list(smk.input.summaries), PATHS, smk.output.tex,
                     smk.output.json, smk.output.csv)

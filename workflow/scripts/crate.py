"""Rule `crate`: a table's or figure's Workflow Run RO-Crate, without model weights (`peftir crate --with-weights`)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.app.crate import make_crate

    make_crate(smk.input.report, smk.output.crate, smk.params.publication)

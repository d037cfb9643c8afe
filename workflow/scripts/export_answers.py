"""Rule `export_answers`: each question's answer strings, for judging a dataset's runs by answer matching."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.data.export import export_answers

    export_answers(smk.params.export, smk.output.answers)

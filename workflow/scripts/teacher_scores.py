"""Rule `teacher_scores`: MarginMSE's teacher file downloaded from its URL and checked against its pin."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.splade.teacher import fetch_teacher_scores

    print(fetch_teacher_scores(smk.params.splade_teacher, smk.output.scores))

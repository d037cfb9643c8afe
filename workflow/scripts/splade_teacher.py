"""Rule `splade_teacher`: a cross-encoder's scores of a dataset's training queries (MarginMSE) as a run."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.splade.teacher import write_teacher_run

    print(write_teacher_run(smk.input.scores, smk.params.splade_teacher.get("sha256"), smk.input.folds,
                            smk.output.run))

"""Rule `pretrain`: one Condenser, coCondenser or RIP run on a collection's documents."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.dense.pretraining.retrieval_pretraining import pretrain_run

    pretrain_run(smk.params.pretraining, smk.input.docs, smk.output.backbone, smk.output.summary, smk.threads,
                 start=smk.input.get("backbone"), warm_start=smk.input.get("warm_start"))

"""Rules `train` and `train_first_stage`: one ranker × method trained on one fold with one seed."""
from peftir.pipeline.job import job, job_key

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.semi_siamese.train_ranker import train_ranker

    train_ranker(
        Collection.of(dict(smk.input.items())), smk.input.candidates,
        smk.wildcards.dataset, smk.wildcards.fold, int(smk.wildcards.seed), smk.wildcards.ranker,
        backbone=smk.params.backbone, settings=smk.params.ranker, method=smk.params.method,
        training=smk.params.training, reranking=smk.params.rerank, validation=smk.params.validation,
        execution=smk.params.execution, threads=smk.threads, weights=smk.output.weights, summary=smk.output.summary,
        resume_key=job_key(smk), first_stage=smk.input.get("first_stage"), triples=smk.input.get("triples"))

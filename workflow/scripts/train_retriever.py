"""Rule `train_retriever`: one dense retriever (full fine-tuning or deep prompts) on one fold with one seed."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.dense.train import train_fold_retriever

    train_fold_retriever(smk.params.retriever, Collection.of(dict(smk.input.items())), smk.input.negatives,
                         smk.wildcards.fold, int(smk.wildcards.seed), smk.threads, smk.output.model,
                         smk.output.summary, backbone=smk.input.get("backbone"), prompts=smk.input.get("prompts"))

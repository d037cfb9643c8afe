"""Rule `splade_rerank`: a SPLADE retriever's top documents of a collection's test queries reranked."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.splade.train_cross_encoder import rerank_first_stage

    print(rerank_first_stage(smk.params.splade_reranker, smk.params.splade_rerank,
                             Collection.of(dict(smk.input.items())), smk.input.first_stage, smk.wildcards.fold,
                             smk.threads, smk.input.model, dict(smk.wildcards.items()), smk.output.run,
                             smk.output.metadata))

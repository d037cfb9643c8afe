"""Rule `train_splade_reranker`: one cross-encoder of Table 7 (full fine-tuning or adapters) on one fold, one seed."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.splade.train_cross_encoder import train_cross_encoder

    train_cross_encoder(smk.params.splade_reranker, Collection.of(dict(smk.input.items())), smk.input.bm25,
                        smk.wildcards.fold, int(smk.wildcards.seed), smk.threads, smk.output.model,
                        smk.output.summary)

"""Rule `train_splade_reranker`: one cross-encoder of Table 7 (full fine-tuning or adapters) on one fold, one seed."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.rankers.inputs import Collection
    from peftir.training.train_cross_encoder import train_cross_encoder

    train_cross_encoder(smk.params.splade_reranker, Collection.of(dict(smk.input.items())), smk.input.bm25,
                        smk.wildcards.fold, int(smk.wildcards.seed), smk.threads, smk.output.model,
                        smk.output.summary)

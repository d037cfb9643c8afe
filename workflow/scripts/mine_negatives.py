"""Rule `mine_negatives`: UNM's hard negatives for a second-round retriever (un-denoised, and denoised)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.dense.negative_mining import mine_negatives

    mine_negatives(Collection.of(dict(smk.input.items())), smk.input.bm25, smk.input.first_round, smk.wildcards.fold,
                   smk.params.mining, smk.threads, smk.output.negatives, smk.output.summary,
                   reranker_weights=smk.input.get("reranker"))

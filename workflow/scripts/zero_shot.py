"""Rule `zero_shot`: the untrained backbone reranks every test query's BM25 candidates (a reference row)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.semi_siamese.zero_shot import rerank_zero_shot

    rerank_zero_shot(Collection.of(dict(smk.input.items())), smk.input.candidates, smk.wildcards.dataset,
                     backbone=smk.params.backbone, lengths=smk.params.lengths, reranking=smk.params.rerank,
                     execution=smk.params.execution, threads=smk.threads, output=smk.output.run,
                     metadata=smk.output.metadata)

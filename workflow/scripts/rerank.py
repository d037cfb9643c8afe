"""Rule `rerank`: the test fold's BM25 candidates reranked with a trained run's kept weights."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.semi_siamese.rerank import rerank_test_fold

    rerank_test_fold(
        Collection.of(dict(smk.input.items())), smk.input.candidates,
        smk.wildcards.dataset, smk.wildcards.fold, int(smk.wildcards.seed), smk.wildcards.ranker,
        backbone=smk.params.backbone, settings=smk.params.ranker, method=smk.params.method,
        training=smk.params.training, reranking=smk.params.rerank, execution=smk.params.execution,
        threads=smk.threads, weights=smk.input.weights, output=smk.output.run, metadata=smk.output.metadata)

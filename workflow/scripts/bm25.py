"""Rule `bm25`: Anserini BM25 run of the dataset's queries (those some job reads candidates of)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.retrieval.anserini import bm25_search

    bm25_search(smk.input.index, smk.input.queries, smk.input.folds, smk.output.run, smk.output.metadata,
                smk.params.bm25, smk.wildcards.dataset, threads=smk.threads)

"""Rule `toy_rm3_search`: BM25 + RM3 run of a collection's queries on its Anserini index."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir_toy_rm3.search import rm3_search

    rm3_search(smk.input.index, smk.input.queries, smk.input.folds, smk.output.run, smk.output.metadata,
               smk.params.toy_rm3, smk.wildcards.dataset, threads=smk.threads)

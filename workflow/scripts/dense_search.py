"""Rules `dense_search` and `dense_search_untrained`: every query of a dataset searched in its faiss index."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.dense.search import search_queries

    print(search_queries(smk.params.retriever, smk.params.dense_search, smk.input.index, smk.input.queries, smk.threads,
                         dict(smk.wildcards.items()), smk.output.run, smk.output.metadata,
                         trained=smk.input.get("model")))

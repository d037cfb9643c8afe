"""Rules `dense_index` and `dense_index_untrained`: a corpus encoded once into a faiss index."""
from peftir.pipeline.job import job, noted

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.dense.search import index_corpus

    print(noted(index_corpus(smk.params.retriever, smk.params.dense_search, smk.input.docs, smk.threads,
                             smk.output.index, trained=smk.input.get("model"))))

"""Rule `splade_index`: a collection encoded once by a trained SPLADE retriever into an Anserini impact index."""
from peftir.pipeline.job import job, noted

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.splade.search import index_trained

    print(noted(index_trained(smk.params.splade, smk.params.splade_index, smk.input.docs, smk.threads,
                              smk.output.index, smk.input.model, backbone=smk.input.get("backbone"))))

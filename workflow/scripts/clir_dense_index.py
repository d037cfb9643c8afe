"""Rule `clir_dense_index`: one language's documents embedded once into a faiss index for the dense pre-ranker."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.prerank import embed_documents

    embed_documents(smk.input.docs, smk.params.clir_encoder, execution=smk.params.execution, threads=smk.threads,
                    index=smk.output.index)

"""Rule `index`: an Anserini index of the exported documents."""
from peftir.pipeline.job import job, noted

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.retrieval.anserini import index_collection

    noted(index_collection(smk.input.docs, smk.input.info, smk.output.index, threads=smk.threads))

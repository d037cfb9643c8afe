"""Rule `clir_index`: an Anserini index of one language's test documents, with that language's analyzer."""
from peftir.pipeline.job import job, noted

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.retrieval.anserini import index_language

    noted(index_language(smk.input.docs, smk.output.index, smk.params.clir_analyzer, threads=smk.threads))

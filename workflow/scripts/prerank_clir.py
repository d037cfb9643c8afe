"""Rule `prerank_clir`: one language pair's pre-ranking of its test queries (dense cosine, BM25, or BM25 of their
translations)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.prerank import prerank_clir

    prerank_clir(smk.wildcards.prerank, smk.params.clir_prerank, smk.wildcards.pair, smk.input.queries,
                 smk.input.folds, smk.input.index, execution=smk.params.execution, threads=smk.threads,
                 run=smk.output.run, metadata=smk.output.metadata, translations=smk.input.get("translations"))

"""Rule `rerank_clir`: one composed system reranks one language pair's pre-ranking of its test queries."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.reranker import rerank_clir

    rerank_clir(smk.input.get("backbone", smk.params.clir_backbone_name), smk.params.clir_system,
                smk.input.ranking_module, list(smk.input.language_modules), smk.wildcards.pair, smk.input.queries,
                smk.input.docs, smk.input.prerank, smk.input.folds, smk.params.clir_rerank,
                execution=smk.params.execution, threads=smk.threads,
                run=smk.output.run, metadata=smk.output.metadata)

"""Rule `nmt_bm25_clir`: BM25 of one language pair's test queries as the user translated them (Table 1's NMT + BM25)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.translated_bm25 import nmt_bm25_clir

    nmt_bm25_clir(smk.params.clir_translated, smk.wildcards.pair, smk.input.translations, smk.input.queries,
                  smk.input.folds, smk.input.index, threads=smk.threads, run=smk.output.run,
                  metadata=smk.output.metadata)

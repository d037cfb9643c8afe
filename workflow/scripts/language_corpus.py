"""Rule `language_corpus`: one language's MLM text (training and held-out lines) from Debian packages."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.multilingual_text import build_language_corpus

    settings = smk.params.clir_corpus
    build_language_corpus(smk.wildcards.language, settings["parts"], dict(smk.input.items()), smk.params.clir_pins,
                          smk.output.corpus, smk.output.heldout, smk.output.info,
                          heldout_fraction=settings["heldout_fraction"], max_words=settings["max_words"],
                          seed=settings["seed"])

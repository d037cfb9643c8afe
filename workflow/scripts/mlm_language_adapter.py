"""Rule `mlm_language_adapter`: one language module (adapter or SFTM) trained by MLM on its language's text."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.language_module import train_language_module

    settings = smk.params.language_module
    train_language_module(smk.input.get("backbone", smk.params.clir_backbone_name), smk.input.corpus,
                          smk.input.heldout, smk.wildcards.language, smk.wildcards.kind, settings,
                          seed=settings["seed"], execution=smk.params.execution,
                          threads=smk.threads, output=smk.output.module,
                          summary=smk.output.summary)

"""Rule `ranking_adapter`: one ranking module (RA, RM or monoBERT) trained on the English relevance data."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.inputs import Collection
    from peftir.clir.ranking_module import train_ranking_module

    settings = smk.params.ranking_module
    train_ranking_module(smk.input.get("backbone", smk.params.clir_backbone_name), smk.input.get("language_module"),
                         settings["source_language"], settings["kind"], settings["reduction_factor"], settings,
                         Collection.of(dict(smk.input.items())), smk.input.candidates, seed=int(smk.wildcards.seed),
                         execution=smk.params.execution, threads=smk.threads, output=smk.output.module,
                         summary=smk.output.summary)

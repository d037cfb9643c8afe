"""Rule `train_splade`: one SPLADE retriever (full fine-tuning, adapter, bi-adapter) on one fold with one seed."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.splade.train import train_fold_splade

    train_fold_splade(smk.params.splade, dict(smk.input.items()), smk.wildcards.fold, int(smk.wildcards.seed),
                      smk.threads, smk.output.model, smk.output.summary)

"""Rule `mlm_head`: the backbone's MLM head fitted on every language's text, the encoder frozen."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.training.mlm_head import fit_mlm_head

    head = smk.params.clir_backbone["mlm_head"]
    fit_mlm_head(smk.input.get("backbone", smk.params.clir_backbone["name"]), list(smk.input.corpora),
                 list(smk.input.heldout), smk.output.backbone, steps=head["steps"], batch_size=head["batch_size"],
                 block_size=head["block_size"], lr=head["lr"], seed=head["seed"], threads=smk.threads,
                 execution=smk.params.execution, summary=smk.output.summary)

"""Rule `pretraining_mlm_head`: the pretraining backbone's MLM head fitted on a corpus, the encoder frozen."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.training.mlm_head import fit_mlm_head

    head = smk.params.pretraining_mlm_head
    fit_mlm_head(smk.input.get("backbone", head["backbone"]), [smk.input.docs], [smk.input.heldout],
                 smk.output.backbone, steps=head["steps"], batch_size=head["batch_size"],
                 block_size=head["block_size"], lr=head["lr"], seed=head["seed"], threads=smk.threads,
                 execution=smk.params.execution, summary=smk.output.summary)

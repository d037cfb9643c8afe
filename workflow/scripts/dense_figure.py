"""Rule `dense_figure`: [CLS] attention entropy per layer, pre-trained vs fine-tuned (PDF, PNG, JSON, CSV)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.dense.attention_figure import make_attention_figure

    make_attention_figure(smk.params.dense_figure, list(smk.input.pretrained), list(smk.input.fine_tuned),
                          smk.output.pdf, smk.output.png, smk.output.json, smk.output.csv)

"""Rules `attention_entropy` and `attention_entropy_pretrained`: a backbone's [CLS] attention entropy per layer,
fine-tuned or as it comes, on a figure's sample of passages."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.dense.attention_entropy import attention_entropy

    print(attention_entropy(smk.params.attention, smk.input.docs, smk.threads, smk.output.entropy,
                            trained=smk.input.get("model")))

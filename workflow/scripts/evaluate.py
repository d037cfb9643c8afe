"""Rule `evaluate` and its variants (`evaluate_reference`, `evaluate_dense*`, `evaluate_clir*`, `evaluate_splade*`):
a run's per-query and mean metrics on its test queries, R-FLOPS among them for a SPLADE run; each variant's
metrics, depth and scope come in its `evaluation` param."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.evaluation.metrics import measure_run

    measure_run(smk.input.run, smk.input.qrels, smk.input.folds, smk.wildcards.fold, smk.params.evaluation,
                smk.output.metrics, about=dict(smk.wildcards.items()), flops=smk.input.get("flops"))

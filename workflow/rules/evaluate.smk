# Evaluation of runs with ir_measures: per-query and mean values of the configured metrics. One rule, one script
# (workflow/scripts/evaluate.py → peftir.evaluation.metrics.measure_run); every other system's evaluation is a
# `use rule evaluate as evaluate_<system>` variant with its own run, output, log and `evaluation` param (the
# params of peftir.pipeline.contract.PARAMS it uses, by name): evaluate_reference (semi_siamese.smk), evaluate_dense*
# (dense.smk), evaluate_clir* (clir.smk), evaluate_splade* (splade.smk).
from peftir.semi_siamese.contract import RUN


localrules:
    evaluate,


rule evaluate:
    input:
        run=PATHS.run,
        qrels=PATHS.qrels,
        folds=PATHS.folds,
    output:
        metrics=PATHS.metrics,
    log:
        PATHS.log("evaluate", RUN),
    params:
        **params_of("evaluate", evaluation=("metrics", "depth")),
    threads: threads_of("evaluate")
    resources:
        **resources_of("evaluate"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/evaluate.py"

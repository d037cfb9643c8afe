# Evaluation of test-fold runs with ir_measures: per-query and mean values of the configured metrics.


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
        **params_of("metrics", "depth"),
        code=code_of("evaluate"),
    threads: threads_of("evaluate")
    resources:
        **resources_of("evaluate"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/evaluate.py"


# The tables' reference rows (BM25, the untrained backbone), at the depth the rerankers see.
use rule evaluate as evaluate_reference with:
    input:
        run=lambda wc: plan.reference_run(dict(wc.items())),
        qrels=PATHS.qrels,
        folds=PATHS.folds,
    output:
        metrics=PATHS.reference_metrics,
    log:
        PATHS.log("evaluate", "{dataset}/{reference}/fold{fold}"),

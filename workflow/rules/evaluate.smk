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


# BM25, every table's reference row, at the depth the rerankers see.
use rule evaluate as evaluate_bm25 with:
    input:
        run=PATHS.bm25_run,
        qrels=PATHS.qrels,
        folds=PATHS.folds,
    output:
        metrics=PATHS.bm25_metrics,
    log:
        PATHS.log("evaluate", "{dataset}/bm25/fold{fold}"),

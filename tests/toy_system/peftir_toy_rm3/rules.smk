# BM25 + RM3 against BM25 (the package peftir_toy_rm3, installed beside the workflow): the collection's queries
# searched with RM3 on the core's index, both runs evaluated per fold, one table. Its scripts are in the package.
from peftir_toy_rm3 import HERE
from peftir_toy_rm3 import plan as toy_plan

TOY_SCRIPTS = str(HERE / "scripts")


localrules:
    evaluate_toy_rm3,
    evaluate_toy_bm25,
    toy_rm3_table,


rule toy_rm3_search:
    input:
        index=PATHS.index,
        queries=PATHS.queries,
        folds=PATHS.folds,
    output:
        run=PATHS.toy_rm3_run,
        metadata=PATHS.toy_rm3_run_metadata,
    log:
        PATHS.log("toy_rm3_search", "{dataset}"),
    params:
        **params_of(f"{TOY_SCRIPTS}/toy_rm3_search", "toy_rm3", "significance"),
    threads: threads_of("toy_rm3_search")
    resources:
        **resources_of("toy_rm3_search"),
    script:
        "scripts/toy_rm3_search.py"


# Both rows' runs evaluated per fold (its own script on the workflow's evaluation, peftir.evaluation.metrics).
rule evaluate_toy_rm3:
    input:
        run=PATHS.toy_rm3_run,
        qrels=PATHS.qrels,
        folds=PATHS.folds,
    output:
        metrics=PATHS.toy_rm3_metrics,
    log:
        PATHS.log("evaluate_toy_rm3", "{dataset}/fold{fold}"),
    params:
        **params_of(f"{TOY_SCRIPTS}/toy_rm3_evaluate", "toy_rm3_metrics"),
    threads: threads_of("evaluate_toy_rm3")
    resources:
        **resources_of("evaluate_toy_rm3"),
    script:
        "scripts/toy_rm3_evaluate.py"


# BM25's row: the core's BM25 run of the collection, on the same test queries.
use rule evaluate_toy_rm3 as evaluate_toy_bm25 with:
    input:
        run=PATHS.bm25_run,
        qrels=PATHS.qrels,
        folds=PATHS.folds,
    output:
        metrics=PATHS.toy_bm25_metrics,
    log:
        PATHS.log("evaluate_toy_bm25", "{dataset}/fold{fold}"),


rule toy_rm3_table:
    input:
        unpack(lambda wc: toy_plan.table_input(config, wc.table)),
    output:
        tex=report(PATHS.toy_table_tex, category="Tables", subcategory="BM25 + RM3"),
        json=PATHS.toy_table_json,
        csv=PATHS.toy_table_csv,
    log:
        PATHS.log("toy_rm3_table", "{table}"),
    params:
        **params_of(f"{TOY_SCRIPTS}/toy_rm3_table", "toy_rm3_table"),
    threads: threads_of("toy_rm3_table")
    resources:
        **resources_of("toy_rm3_table"),
    script:
        "scripts/toy_rm3_table.py"

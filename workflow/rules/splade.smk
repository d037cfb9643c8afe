# SPLADE with adapters (Pal et al.): one training job per dataset × backbone × method × fold × seed → each
# collection it searches (its own; TREC DL's, BEIR's zero-shot) encoded once into an Anserini impact index →
# every query searched, its FLOPS measured → the test queries evaluated, R-FLOPS among the metrics → the tables.
from peftir.splade import plan as splade_plan
from peftir.splade.contract import RERANKED, RERANKER, SPLADE, SPLADE_TARGET


# The teacher's scores are downloaded (compute nodes often lack the internet); evaluations and tables are cheap.
localrules:
    all_splade_tables,
    teacher_scores,
    evaluate_splade,
    evaluate_splade_bm25,
    evaluate_splade_reranked,
    splade_table,


# MarginMSE's teacher (Table 2): a cross-encoder's scores file, downloaded once and checked against its pin ...
rule teacher_scores:
    output:
        scores=PATHS.splade_teacher_scores,
    log:
        PATHS.log("teacher_scores", "teacher"),
    params:
        **params_of("teacher_scores", "splade_teacher"),
    threads: threads_of("teacher_scores")
    resources:
        **resources_of("teacher_scores"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/teacher_scores.py"


# ... and a dataset's training queries' scores from it, as a run.
rule splade_teacher:
    input:
        folds=PATHS.folds,
        scores=lambda wc: splade_plan.teacher_scores(config),
    output:
        run=PATHS.splade_teacher,
    log:
        PATHS.log("splade_teacher", "{dataset}"),
    params:
        **params_of("splade_teacher", "splade_teacher"),
    threads: threads_of("splade_teacher")
    resources:
        **resources_of("splade_teacher"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/splade_teacher.py"


rule train_splade:
    input:
        unpack(lambda wc: splade_plan.train_splade_input(config, dict(wc.items()))),
    output:
        model=directory(PATHS.splade_model),
        summary=PATHS.splade_summary,
    log:
        PATHS.log("train_splade", SPLADE),
    params:
        **params_of("train_splade", "splade"),
    threads: threads_of("train_splade")
    resources:
        **resources_of("train_splade"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train_splade.py"


rule splade_index:
    input:
        unpack(lambda wc: splade_plan.splade_model_input(config, dict(wc.items()))),
        docs=lambda wc: PATHS.docs.format(dataset=wc.target),
    output:
        index=directory(PATHS.splade_index),
    log:
        PATHS.log("splade_index", SPLADE_TARGET),
    group:
        run_group("splade", SPLADE_TARGET)
    params:
        **params_of("splade_index", "splade", "splade_index"),
    threads: threads_of("splade_index")
    resources:
        **resources_of("splade_index", grouped=True),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/splade_index.py"


rule splade_search:
    input:
        unpack(lambda wc: splade_plan.splade_search_input(config, dict(wc.items()))),
    output:
        run=PATHS.splade_run,
        metadata=PATHS.splade_run_metadata,
        flops=PATHS.splade_flops,
    log:
        PATHS.log("splade_search", SPLADE_TARGET),
    group:
        run_group("splade", SPLADE_TARGET)
    params:
        **params_of("splade_search", "splade", "splade_index", "significance"),
    threads: threads_of("splade_search")
    resources:
        **resources_of("splade_search", grouped=True),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/splade_search.py"


# The search's FLOPS an input: R-FLOPS joins the metrics.
use rule evaluate as evaluate_splade with:
    input:
        run=PATHS.splade_run,
        flops=PATHS.splade_flops,
        qrels=lambda wc: PATHS.qrels.format(dataset=wc.target),
        folds=lambda wc: PATHS.folds.format(dataset=wc.target),
    output:
        metrics=PATHS.splade_metrics,
    log:
        PATHS.log("evaluate_splade", SPLADE_TARGET),
    params:
        evaluation=param_of("splade_evaluation"),
    threads: threads_of("evaluate_splade")
    resources:
        **resources_of("evaluate_splade"),


# BM25's row: its run of the collection, on the same queries as SPLADE's there (no R-FLOPS: not a learned vector).
use rule evaluate_splade as evaluate_splade_bm25 with:
    input:
        run=lambda wc: PATHS.bm25_run.format(dataset=wc.target),
        qrels=lambda wc: PATHS.qrels.format(dataset=wc.target),
        folds=lambda wc: PATHS.folds.format(dataset=wc.target),
    output:
        metrics=PATHS.splade_bm25_metrics,
    log:
        PATHS.log("evaluate_splade", "{target}/bm25/fold{fold}"),


# Table 7: cross-encoders (full fine-tuning or adapters) reranking a SPLADE retriever's top documents.
rule train_splade_reranker:
    input:
        unpack(lambda wc: splade_plan.splade_reranker_input(config, dict(wc.items()))),
    output:
        model=directory(PATHS.reranker_model),
        summary=PATHS.reranker_summary,
    log:
        PATHS.log("train_splade_reranker", RERANKER),
    params:
        **params_of("train_splade_reranker", "splade_reranker"),
    threads: threads_of("train_splade_reranker")
    resources:
        **resources_of("train_splade_reranker"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train_splade_reranker.py"


rule splade_rerank:
    input:
        unpack(lambda wc: splade_plan.splade_rerank_input(config, dict(wc.items()))),
    output:
        run=PATHS.reranked_run,
        metadata=PATHS.reranked_run_metadata,
    log:
        PATHS.log("splade_rerank", RERANKED),
    group:
        bundle_group("splade_rerank_{dataset}_{reranker}_{fold}_{seed}")
    params:
        **params_of("splade_rerank", "splade_reranker", "splade_rerank", "significance"),
    threads: threads_of("splade_rerank")
    resources:
        **resources_of("splade_rerank", grouped=True),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/splade_rerank.py"


use rule evaluate_splade as evaluate_splade_reranked with:
    input:
        run=PATHS.reranked_run,
        qrels=lambda wc: PATHS.qrels.format(dataset=wc.target),
        folds=lambda wc: PATHS.folds.format(dataset=wc.target),
    output:
        metrics=PATHS.reranked_metrics,
    log:
        PATHS.log("evaluate_splade", RERANKED),


# The paper's tables: a dense table's rule (retrieval_tables.smk) with the SPLADE runs' metrics.
use rule dense_table as splade_table with:
    input:
        unpack(lambda wc: splade_plan.splade_report_runs(config, wc.table)),
    output:
        tex=report(
            PATHS.splade_table_tex,
            category="Tables",
            subcategory="SPLADE with adapters",
            caption="../report/splade_table.rst",
        ),
        json=PATHS.splade_table_json,
        csv=PATHS.splade_table_csv,
    log:
        PATHS.log("splade_table", "{table}"),
    params:
        retrieval_table=param_of("splade_table"),
    threads: threads_of("splade_table")
    resources:
        **resources_of("splade_table"),


rule all_splade_tables:
    input:
        expand(PATHS.splade_table_tex, table=splade_plan.splade_report_names(config)),

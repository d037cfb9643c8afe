# The Semi-Siamese system (Jung et al.): neural rerankers with fine-tuning methods, one training job per
# dataset × ranker × method × fold × seed, then the test fold reranked with the kept weights → evaluated (with the
# reference rows: BM25, the untrained backbone) → Tables 3-7 (mean over folds and seeds, one-tailed t-tests vs
# full fine-tuning) and Figure 4.
from peftir.semi_siamese import plan as semi_siamese_plan
from peftir.semi_siamese.contract import FIRST_STAGE, RUN


localrules:
    evaluate_reference,
    table,
    figure,


rule train:
    input:
        unpack(lambda wc: inputs.collection(wc)),
        unpack(lambda wc: inputs.backbone_input(config["backbone"]["name"])),
        unpack(lambda wc: semi_siamese_plan.first_stage_input(config, dict(wc.items()))),
        unpack(lambda wc: semi_siamese_plan.triples_input(config, dict(wc.items()))),
        candidates=PATHS.bm25_run,
    output:
        weights=PATHS.weights,
        summary=PATHS.summary,
    log:
        PATHS.log("train", RUN),
    params:
        **params_of("train", "backbone", "ranker", "method", "training", "rerank", "validation", "execution"),
    threads: threads_of("train")
    resources:
        **resources_of("train"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train.py"


# A sequential hybrid's first part trained on its own for m epochs, when m differs from the
# standalone epochs (otherwise the hybrid starts from the standalone run); hybrids with the same
# first part share it.
use rule train as train_first_stage with:
    output:
        weights=PATHS.first_stage_weights,
        summary=PATHS.first_stage_summary,
    log:
        PATHS.log("train", FIRST_STAGE),


rule rerank:
    input:
        unpack(lambda wc: inputs.collection(wc)),
        unpack(lambda wc: inputs.backbone_input(config["backbone"]["name"])),
        candidates=PATHS.bm25_run,
        weights=PATHS.weights,
    output:
        run=PATHS.run,
        metadata=PATHS.run_metadata,
    log:
        PATHS.log("rerank", RUN),
    group:
        bundle_group("semi_siamese_rerank")
    params:
        **params_of("rerank", "backbone", "ranker", "method", "training", "rerank", "execution", "significance"),
    threads: threads_of("rerank")
    resources:
        **resources_of("rerank", grouped=True),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/rerank.py"


# The untrained backbone reranks every test query's BM25 candidates: a reference row of the tables.
rule zero_shot:
    input:
        unpack(lambda wc: inputs.collection(wc)),
        unpack(lambda wc: inputs.backbone_input(config["backbone"]["name"])),
        candidates=PATHS.bm25_run,
    output:
        run=PATHS.backbone_run,
        metadata=PATHS.backbone_run_metadata,
    log:
        PATHS.log("zero_shot", "{dataset}"),
    params:
        **params_of("zero_shot", "backbone", "lengths", "rerank", "execution", "significance"),
    threads: threads_of("zero_shot")
    resources:
        **resources_of("zero_shot"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/zero_shot.py"


# The tables' reference rows (BM25, the untrained backbone), at the depth the rerankers see.
use rule evaluate as evaluate_reference with:
    input:
        run=lambda wc: semi_siamese_plan.reference_run(dict(wc.items())),
        qrels=PATHS.qrels,
        folds=PATHS.folds,
    output:
        metrics=PATHS.reference_metrics,
    log:
        PATHS.log("evaluate", "{dataset}/{reference}/fold{fold}"),


rule table:
    input:
        metrics=lambda wc: semi_siamese_plan.report_runs(config, "tables", wc.table, PATHS.metrics),
        summaries=lambda wc: semi_siamese_plan.report_runs(config, "tables", wc.table, PATHS.summary),
        reference=semi_siamese_plan.reference_runs(config),
    output:
        tex=report(PATHS.table_tex, category="Tables", caption="../report/table.rst"),
        json=PATHS.table_json,
        csv=PATHS.table_csv,
    log:
        PATHS.log("table", "{table}"),
    params:
        **params_of("table", "table"),
    threads: threads_of("table")
    resources:
        **resources_of("table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/table.py"


rule figure:
    input:
        metrics=lambda wc: semi_siamese_plan.report_runs(config, "figures", wc.figure, PATHS.metrics),
        summaries=lambda wc: semi_siamese_plan.report_runs(config, "figures", wc.figure, PATHS.summary),
    output:
        pdf=report(PATHS.figure_pdf, category="Figures", caption="../report/figure.rst"),
        png=PATHS.figure_png,
        json=PATHS.figure_json,
    log:
        PATHS.log("figure", "{figure}"),
    params:
        **params_of("figure", "figure"),
    threads: threads_of("figure")
    resources:
        **resources_of("figure"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/figure.py"

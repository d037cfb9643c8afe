# Modular cross-lingual rerankers (Litschko et al.), at test time: each system composed from its modules
# reranks a pair's pre-ranking → MAP on the test queries → Tables 1-3 and Figure 2.


rule rerank_clir:
    input:
        unpack(lambda wc: plan.clir_backbone(config)),
        unpack(lambda wc: plan.rerank_clir_input(config, dict(wc.items()))),
    output:
        run=PATHS.clir_run,
        metadata=PATHS.clir_run_metadata,
    log:
        PATHS.log("rerank_clir", CLIR_RUN),
    params:
        **params_of("clir_system", "clir_rerank", "clir_backbone_name", "execution"),
        code=code_of("rerank_clir"),
    threads: threads_of("rerank_clir")
    resources:
        **resources_of("rerank_clir"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/rerank_clir.py"


rule evaluate_clir:
    input:
        run=PATHS.clir_run,
        qrels=lambda wc: PATHS.clir_qrels.format(language=pair_languages(wc.pair)[1]),
        folds=PATHS.clir_folds,
    output:
        metrics=PATHS.clir_metrics,
    log:
        PATHS.log("evaluate_clir", f"{CLIR_RUN}/fold{{fold}}"),
    params:
        **params_of("clir_metric"),
        code=code_of("evaluate_clir"),
    threads: threads_of("evaluate_clir")
    resources:
        **resources_of("evaluate_clir"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/evaluate_clir.py"


# The pre-ranker's own row of the tables.
use rule evaluate_clir as evaluate_clir_prerank with:
    input:
        run=PATHS.clir_prerank,
        qrels=lambda wc: PATHS.clir_qrels.format(language=pair_languages(wc.pair)[1]),
        folds=PATHS.clir_folds,
    output:
        metrics=PATHS.clir_prerank_metrics,
    log:
        PATHS.log("evaluate_clir", "{pair}/{prerank}/fold{fold}"),


# Table 1's NMT + BM25 row.
use rule evaluate_clir as evaluate_clir_translated with:
    input:
        run=PATHS.clir_translated_run,
        qrels=lambda wc: PATHS.clir_qrels.format(language=pair_languages(wc.pair)[1]),
        folds=PATHS.clir_folds,
    output:
        metrics=PATHS.clir_translated_metrics,
    log:
        PATHS.log("evaluate_clir", "{pair}/nmt-bm25/fold{fold}"),


rule clir_table:
    input:
        unpack(lambda wc: plan.clir_report_runs(config, "tables", wc.table)),
    output:
        tex=report(PATHS.clir_table_tex, category="Tables", subcategory="Modular CLIR",
                   caption="../report/clir_table.rst"),
        json=PATHS.clir_table_json,
        csv=PATHS.clir_table_csv,
    log:
        PATHS.log("clir_table", "{table}"),
    params:
        **params_of("clir_table"),
        code=code_of("clir_table"),
    threads: threads_of("clir_table")
    resources:
        **resources_of("clir_table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_table.py"


rule clir_figure:
    input:
        unpack(lambda wc: plan.clir_report_runs(config, "figures", wc.figure)),
    output:
        pdf=report(PATHS.clir_figure_pdf, category="Figures", subcategory="Modular CLIR",
                   caption="../report/clir_figure.rst"),
        png=PATHS.clir_figure_png,
        json=PATHS.clir_figure_json,
    log:
        PATHS.log("clir_figure", "{figure}"),
    params:
        **params_of("clir_figure"),
        code=code_of("clir_figure"),
    threads: threads_of("clir_figure")
    resources:
        **resources_of("clir_figure"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_figure.py"

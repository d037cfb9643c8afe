# Result tables (mean over folds and seeds, one-tailed t-tests vs full fine-tuning) and figures.


rule table:
    input:
        metrics=lambda wc: plan.report_runs(config, "tables", wc.table, PATHS.metrics),
        summaries=lambda wc: plan.report_runs(config, "tables", wc.table, PATHS.summary),
        reference=plan.reference_runs(config),
    output:
        tex=report(PATHS.table_tex, category="Tables", caption="../report/table.rst"),
        json=PATHS.table_json,
        csv=PATHS.table_csv,
    log:
        PATHS.log("table", "{table}"),
    params:
        **params_of("table"),
        code=code_of("table"),
    threads: threads_of("table")
    resources:
        **resources_of("table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/table.py"


rule figure:
    input:
        metrics=lambda wc: plan.report_runs(config, "figures", wc.figure, PATHS.metrics),
        summaries=lambda wc: plan.report_runs(config, "figures", wc.figure, PATHS.summary),
    output:
        pdf=report(PATHS.figure_pdf, category="Figures", caption="../report/figure.rst"),
        png=PATHS.figure_png,
        json=PATHS.figure_json,
    log:
        PATHS.log("figure", "{figure}"),
    params:
        **params_of("figure"),
        code=code_of("figure"),
    threads: threads_of("figure")
    resources:
        **resources_of("figure"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/figure.py"

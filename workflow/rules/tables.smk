# Result tables (mean over folds and seeds, one-tailed t-tests vs full fine-tuning) and figures.


rule table:
    input:
        code=code("peftir.jobs.reports"),
        metrics=lambda wc: layout_runs("tables", wc.table, "metrics"),
        summaries=lambda wc: layout_runs("tables", wc.table, "summaries"),
        reference=bm25_metrics,
    output:
        tex=report("results/tables/{table}.tex", category="Tables", caption="../report/table.rst"),
        json="results/tables/{table}.json",
        csv="results/tables/{table}.csv",
    log:
        "results/logs/table/{table}.log",
    params:
        table=lambda wc: layout_spec("tables", wc.table),
    threads: threads_of("table")
    resources:
        **resources_of("table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/table.py"


rule figure:
    input:
        code=code("peftir.jobs.reports"),
        metrics=lambda wc: layout_runs("figures", wc.figure, "metrics"),
        summaries=lambda wc: layout_runs("figures", wc.figure, "summaries"),
    output:
        pdf=report("results/figures/{figure}.pdf", category="Figures", caption="../report/figure.rst"),
        png="results/figures/{figure}.png",
        json="results/figures/{figure}.json",
    log:
        "results/logs/figure/{figure}.log",
    params:
        figure=lambda wc: layout_spec("figures", wc.figure),
    threads: threads_of("figure")
    resources:
        **resources_of("figure"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/figure.py"

# Result tables (mean over folds and seeds, one-tailed t-tests vs full fine-tuning) and figures.


rule table:
    input:
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
    threads: resources_of("table")["threads"]
    resources:
        mem_mb=resources_of("table")["mem_mb"],
        runtime=resources_of("table")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/table.py"


rule figure:
    input:
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
    threads: resources_of("figure")["threads"]
    resources:
        mem_mb=resources_of("figure")["mem_mb"],
        runtime=resources_of("figure")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/figure.py"

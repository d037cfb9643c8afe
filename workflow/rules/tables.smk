# Result tables: mean over folds and seeds, one-tailed t-tests vs full fine-tuning.


rule table:
    input:
        metrics=lambda wc: table_runs(wc, "metrics"),
        summaries=lambda wc: table_runs(wc, "summaries"),
        reference=lambda wc: [
            f"results/metrics/{d}/bm25/fold{f}.json" for d in DATASETS for f in folds_of(d)
        ],
    output:
        tex=report("results/tables/{table}.tex", category="Tables"),
        json="results/tables/{table}.json",
        csv="results/tables/{table}.csv",
    log:
        "results/logs/table/{table}.log",
    params:
        table=table_spec,
    threads: resources_of("table")["threads"]
    resources:
        mem_mb=resources_of("table")["mem_mb"],
        runtime=resources_of("table")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/table.py"

# Dataset export (ir_datasets) and query folds.


rule download:
    input:
        code=code("peftir.jobs.collection"),
    output:
        docs="results/data/{dataset}/corpus/docs.jsonl",
        queries="results/data/{dataset}/queries.tsv",
        qrels="results/data/{dataset}/qrels.txt",
        info="results/data/{dataset}/info.json",
    log:
        "results/logs/download/{dataset}.log",
    params:
        spec=lambda wc: dataset_subset(wc.dataset, EXPORT_KEYS),
    threads: threads_of("download")
    resources:
        **resources_of("download"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/download.py"


rule folds:
    input:
        code=code("peftir.jobs.folding"),
        queries="results/data/{dataset}/queries.tsv",
        user_folds=lambda wc: config["datasets"][wc.dataset]["folds"].get("path", []),
    output:
        folds="results/data/{dataset}/folds.json",
    log:
        "results/logs/folds/{dataset}.log",
    params:
        spec=lambda wc: dataset_subset(wc.dataset, FOLD_KEYS),
    threads: 1
    resources:
        mem_mb=resources_of("evaluate")["mem_mb"],
        runtime=resources_of("evaluate")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/folds.py"

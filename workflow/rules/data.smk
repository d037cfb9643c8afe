# Datasets: export from ir_datasets, then the query folds.


# The exports need the internet, which compute nodes often lack; folds and triples are cheap.
localrules:
    download,
    export_answers,
    folds,
    triples,


rule download:
    input:
        lambda wc: plan.licensed_source(config, wc),
    output:
        docs=PATHS.docs,
        docs_lookup=PATHS.docs_lookup,
        empty_docs=PATHS.empty_docs,
        queries=PATHS.queries,
        qrels=PATHS.qrels,
        info=PATHS.export_info,
    log:
        PATHS.log("download", "{dataset}"),
    params:
        **params_of("download", "export"),
    threads: threads_of("download")
    resources:
        **resources_of("download"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/download.py"


rule folds:
    input:
        queries=PATHS.queries,
        user_folds=lambda wc: config["datasets"][wc.dataset]["folds"].get("path", []),
    output:
        folds=PATHS.folds,
    log:
        PATHS.log("folds", "{dataset}"),
    params:
        **params_of("folds", "folds"),
    threads: threads_of("folds")
    resources:
        **resources_of("folds"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/folds.py"


# Fixed training triples, for datasets trained from them (MS MARCO): made once from the training split.
rule triples:
    input:
        qrels=PATHS.qrels,
        folds=PATHS.folds,
        docs=PATHS.docs,
        docs_lookup=PATHS.docs_lookup,
    output:
        triples=PATHS.triples,
    log:
        PATHS.log("triples", "{dataset}"),
    params:
        **params_of("triples", "train_pairs"),
    threads: threads_of("triples")
    resources:
        **resources_of("triples"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/triples.py"


# The questions' answers, for datasets whose runs are judged by answer matching (datasets.<name>.answers: dpr).
rule export_answers:
    input:
        info=PATHS.export_info,
    output:
        answers=PATHS.answers,
    log:
        PATHS.log("export_answers", "{dataset}"),
    params:
        **params_of("export_answers", "export"),
    threads: threads_of("download")
    resources:
        **resources_of("download"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/export_answers.py"

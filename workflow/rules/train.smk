# Training (one job per dataset × ranker × method × fold × seed) and test reranking.


rule train:
    input:
        unpack(dataset_files),
        unpack(first_stage_input),
        run="results/runs/{dataset}/bm25.run",
        code=code("peftir.jobs.ranking"),
    output:
        weights="results/models/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.pt",
        summary="results/models/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.json",
    log:
        "results/logs/train/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.log",
    params:
        backbone=config["backbone"],
        ranker=config["ranker"],
        method=method_settings,
        training=training_settings,
        rerank=config["rerank"],
        dataset=dataset_settings,
        device=config["execution"]["device"],
    threads: threads_of("train")
    resources:
        **resources_of("train"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train.py"


# Only when training.sequential.first_epochs (m) differs from the standalone epochs: the first part
# of a sequential hybrid trained on its own for m epochs (otherwise its standalone run is reused).
rule train_first_stage:
    input:
        unpack(dataset_files),
        run="results/runs/{dataset}/bm25.run",
        code=code("peftir.jobs.ranking"),
    output:
        weights="results/models/{dataset}/{ranker}/{method}/stage1/fold{fold}-seed{seed}.pt",
        summary="results/models/{dataset}/{ranker}/{method}/stage1/fold{fold}-seed{seed}.json",
    log:
        "results/logs/train/{dataset}/{ranker}/{method}/stage1/fold{fold}-seed{seed}.log",
    params:
        backbone=config["backbone"],
        ranker=config["ranker"],
        method=first_stage_method,
        training=first_stage_training,
        rerank=config["rerank"],
        dataset=dataset_settings,
        device=config["execution"]["device"],
    threads: threads_of("train")
    resources:
        **resources_of("train"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train.py"


rule rerank:
    input:
        unpack(dataset_files),
        run="results/runs/{dataset}/bm25.run",
        weights="results/models/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.pt",
        code=code("peftir.jobs.ranking"),
    output:
        run="results/runs/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.run",
    log:
        "results/logs/rerank/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.log",
    params:
        backbone=config["backbone"],
        ranker=config["ranker"],
        method=method_settings,
        training=training_settings,
        rerank=config["rerank"],
        device=config["execution"]["device"],
    threads: threads_of("rerank")
    resources:
        **resources_of("rerank"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/rerank.py"

# Training (one job per dataset × ranker × method × fold × seed) and test reranking.


rule train:
    input:
        unpack(dataset_files),
        unpack(first_stage_input),
        run="results/runs/{dataset}/bm25.run",
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
    threads: resources_of("train")["threads"]
    resources:
        mem_mb=resources_of("train")["mem_mb"],
        runtime=resources_of("train")["runtime"],
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
    threads: resources_of("train")["threads"]
    resources:
        mem_mb=resources_of("train")["mem_mb"],
        runtime=resources_of("train")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train.py"


rule rerank:
    input:
        unpack(dataset_files),
        run="results/runs/{dataset}/bm25.run",
        weights="results/models/{dataset}/{ranker}/{method}/fold{fold}-seed{seed}.pt",
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
    threads: resources_of("rerank")["threads"]
    resources:
        mem_mb=resources_of("rerank")["mem_mb"],
        runtime=resources_of("rerank")["runtime"],
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/rerank.py"

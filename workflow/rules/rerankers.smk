# Neural rerankers with fine-tuning methods (the Semi-Siamese paper): one training job per
# dataset × ranker × method × fold × seed, then the test fold reranked with the kept weights.


rule train:
    input:
        unpack(lambda wc: plan.collection(wc)),
        unpack(lambda wc: plan.backbone_input(config["backbone"]["name"])),
        unpack(lambda wc: plan.first_stage_input(config, dict(wc.items()))),
        unpack(lambda wc: plan.triples_input(config, dict(wc.items()))),
        candidates=PATHS.bm25_run,
    output:
        weights=PATHS.weights,
        summary=PATHS.summary,
    log:
        PATHS.log("train", RUN),
    params:
        **params_of("backbone", "ranker", "method", "training", "rerank", "validation", "execution"),
        code=code_of("train"),
    threads: threads_of("train")
    resources:
        **resources_of("train"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/train.py"


# A sequential hybrid's first part trained on its own for m epochs, when m differs from the
# standalone epochs (otherwise the hybrid starts from the standalone run); hybrids with the same
# first part share it.
use rule train as train_first_stage with:
    output:
        weights=PATHS.first_stage_weights,
        summary=PATHS.first_stage_summary,
    log:
        PATHS.log("train", FIRST_STAGE),


rule rerank:
    input:
        unpack(lambda wc: plan.collection(wc)),
        unpack(lambda wc: plan.backbone_input(config["backbone"]["name"])),
        candidates=PATHS.bm25_run,
        weights=PATHS.weights,
    output:
        run=PATHS.run,
        metadata=PATHS.run_metadata,
    log:
        PATHS.log("rerank", RUN),
    params:
        **params_of("backbone", "ranker", "method", "training", "rerank", "execution"),
        code=code_of("rerank"),
    threads: threads_of("rerank")
    resources:
        **resources_of("rerank"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/rerank.py"


# The untrained backbone reranks every test query's BM25 candidates: a reference row of the tables.
rule zero_shot:
    input:
        unpack(lambda wc: plan.collection(wc)),
        unpack(lambda wc: plan.backbone_input(config["backbone"]["name"])),
        candidates=PATHS.bm25_run,
    output:
        run=PATHS.backbone_run,
        metadata=PATHS.backbone_run_metadata,
    log:
        PATHS.log("zero_shot", "{dataset}"),
    params:
        **params_of("backbone", "lengths", "rerank", "execution"),
        code=code_of("zero_shot"),
    threads: threads_of("zero_shot")
    resources:
        **resources_of("zero_shot"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/zero_shot.py"

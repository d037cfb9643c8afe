# Pretraining for dense retrieval (Gao & Callan: Condenser, coCondenser; Tang et al.: RIP): one job per named run
# (corpus × objective × seed). A run's checkpoint is the backbone `pretrained:<run>` of any stage.


# The MLM head a backbone lacks (the embedded MiniLM), fitted on a corpus with the encoder frozen.
rule pretraining_mlm_head:
    input:
        unpack(lambda wc: plan.mlm_head_corpus(config)),
        unpack(lambda wc: plan.backbone_input(config["pretraining"]["backbone"]["name"])),
    output:
        backbone=directory(PATHS.pretraining_mlm_backbone),
        summary=PATHS.pretraining_mlm_summary,
    log:
        PATHS.log("pretraining_mlm_head", "mlm-head"),
    params:
        **params_of("pretraining_mlm_head", "execution"),
        code=code_of("pretraining_mlm_head"),
    threads: threads_of("pretraining_mlm_head")
    resources:
        **resources_of("pretraining_mlm_head"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/pretraining_mlm_head.py"


rule pretrain:
    input:
        unpack(lambda wc: plan.pretrain_input(config, dict(wc.items()))),
    output:
        backbone=directory(PATHS.pretrained),
        summary=PATHS.pretrained_summary,
    log:
        PATHS.log("pretrain", "{pretrained}"),
    params:
        **params_of("pretraining"),
        code=code_of("pretrain"),
    threads: threads_of("pretrain")
    resources:
        **resources_of("pretrain"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/pretrain.py"

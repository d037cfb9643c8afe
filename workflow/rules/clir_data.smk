# Modular cross-lingual rerankers (Litschko et al.), their data: Debian packages → language corpora
# (MLM text) and the test collection → Anserini indexes (with language analyzers) and faiss indexes of
# embedded documents → pre-rankings.


# A package is fetched from its URL and checked against its sha256 (run where the network is).
rule debian_package:
    output:
        deb=PATHS.clir_package,
    log:
        PATHS.log("debian_package", "{package}"),
    params:
        **params_of("clir_package"),
        code=code_of("debian_package"),
    threads: threads_of("debian_package")
    resources:
        **resources_of("debian_package"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/debian_package.py"


rule language_corpus:
    input:
        unpack(lambda wc: plan.corpus_inputs(config, wc.language)),
    output:
        corpus=PATHS.clir_corpus,
        heldout=PATHS.clir_heldout,
        info=PATHS.clir_corpus_info,
    log:
        PATHS.log("language_corpus", "{language}"),
    params:
        **params_of("clir_corpus"),
        code=code_of("language_corpus"),
    threads: threads_of("language_corpus")
    resources:
        **resources_of("language_corpus"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/language_corpus.py"


rule clir_collection:
    input:
        unpack(lambda wc: plan.collection_packages(config)),
    output:
        **plan.clir_collection_files(config),
    log:
        PATHS.log("clir_collection", "collection"),
    params:
        **params_of("clir_collection", "clir_languages"),
        code=code_of("clir_collection"),
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
        **params_of("clir_analyzer"),
        code=code_of("clir_index"),
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
        **params_of("clir_encoder", "execution"),
        code=code_of("clir_dense_index"),
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
        unpack(lambda wc: plan.prerank_input(config, dict(wc.items()))),
    output:
        run=PATHS.clir_prerank,
        metadata=PATHS.clir_prerank_metadata,
    log:
        PATHS.log("prerank_clir", "{pair}/{prerank}"),
    params:
        **params_of("clir_prerank", "execution"),
        code=code_of("prerank_clir"),
    threads: threads_of("prerank_clir")
    resources:
        **resources_of("prerank_clir"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/prerank_clir.py"


# Table 1's NMT + BM25 row: BM25, as the BM25 pre-ranker searches, of the user's translations of the pair's test
# queries into the documents' language (modular_clir.translations; no translation model installs here).
rule nmt_bm25_clir:
    input:
        unpack(lambda wc: plan.nmt_bm25_input(config, dict(wc.items()))),
    output:
        run=PATHS.clir_translated_run,
        metadata=PATHS.clir_translated_metadata,
    log:
        PATHS.log("nmt_bm25_clir", "{pair}"),
    params:
        **params_of("clir_translated"),
        code=code_of("nmt_bm25_clir"),
    threads: threads_of("nmt_bm25_clir")
    resources:
        **resources_of("nmt_bm25_clir"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/nmt_bm25_clir.py"

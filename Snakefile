# PEFT-IR Repro: end-to-end reproduction of parameter-efficient fine-tuning of neural rankers.
#
#   snakemake --cores all                      # the default target: results/tables/table5.tex
#   snakemake --cores all all_tables           # every table and figure (Tables 3-7, Figure 4; modular CLIR)
#   snakemake --cores all --configfile config.yaml config/paper.yaml
#   snakemake --profile slurm results/tables/table5.tex   # on a SLURM cluster (slurm/config.yaml)
#   snakemake --cores all all_dense_tables         # the dense retrieval papers' tables (DPTDR, Condenser)
#   snakemake --cores all all_splade_tables        # the Adapters-SPLADE paper's tables
#   snakemake --cores all all_crates           # a Workflow Run RO-Crate of every table and figure
#   snakemake --cores all results/tables/table5.repro.tex   # Table 5 against the paper (scorecard; all_tables: all)
#   snakemake --report report.html             # tables, figures, commit, config, package versions
#
# DAG: download (ir_datasets) → folds (→ triples) → index → bm25 (Anserini) → train → rerank
#      → evaluate (ir_measures) → table (t-tests, LaTeX + JSON + CSV), figure (matplotlib)
# Modular CLIR: debian_package → language_corpus, clir_collection (→ clir_index, clir_dense_index)
#      → multilingual_backbone → mlm_head → mlm_language_adapter → ranking_adapter; prerank_clir
#      → rerank_clir → evaluate_clir → clir_table, clir_figure
# Dense retrieval: pretraining_mlm_head → pretrain (Condenser, coCondenser, RIP) → train_retriever (FT, DPT)
#      → dense_index (faiss) → dense_search → mine_negatives (UNM) → train_retriever (round 2) … → evaluate_dense
#      → dense_table; attention_entropy (backbone as it comes, fine-tuned) → dense_figure (Condenser Figure 2)
# SPLADE with adapters: (pretraining_mlm_head | pretrain →) train_splade (FT, adapter, bi-adapter) → splade_index
#      (Anserini impact) → splade_search → evaluate_splade (R-FLOPS among the metrics) → splade_table;
#      train_splade_reranker → splade_rerank (a SPLADE run's top documents) → evaluate_splade_reranked
#
# Each rule runs workflow/scripts/<rule>.py (a `use rule` variant its base rule's: evaluate_dense runs evaluate.py),
# which calls one function of the peftir package; paths, names and params come from peftir.pipeline.contract (the
# core's and each system's contract joined), planning from each system's plan (peftir.<system>.plan). The rules
# shared by the systems are in workflow/rules/{data,bm25,evaluate,retrieval_tables,crates}.smk, each system's in
# workflow/rules/<system>.smk (semi_siamese, clir, dense, splade); the manual lists every rule with its script and
# package function (docs/development/rules.md).

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# Cheap rules run in the Snakemake process itself on a cluster (the export needs the internet,
# which compute nodes often lack); indexing, retrieval, training and reranking are cluster jobs.
localrules:
    all,
    all_tables,
    all_dense_tables,
    all_splade_tables,
    download,
    folds,
    triples,
    evaluate,
    evaluate_reference,
    table,
    figure,
    crate,
    debian_package,
    evaluate_clir,
    evaluate_clir_prerank,
    clir_table,
    clir_figure,
    evaluate_dense,
    evaluate_dense_untrained,
    evaluate_dense_bm25,
    dense_table,
    dense_figure,
    evaluate_splade,
    evaluate_splade_bm25,
    evaluate_splade_reranked,
    splade_table,
    scorecard,
    significance,
    report_page,


include: "workflow/rules/data.smk"
include: "workflow/rules/bm25.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/retrieval_tables.smk"
include: "workflow/rules/crates.smk"
include: "workflow/rules/reproduction.smk"
# One rules file per system: the Semi-Siamese rerankers always, the others when the config has their section.
include: "workflow/rules/semi_siamese.smk"


if config.get("modular_clir"):

    include: "workflow/rules/clir.smk"


# Pretraining (Condenser, coCondenser, RIP) and dense retrievers (DPTDR, Condenser), when either section is there.
if config.get("pretraining") or config.get("dense_retrieval"):

    include: "workflow/rules/dense.smk"


if config.get("sparse_retrieval"):

    include: "workflow/rules/splade.smk"


rule all:
    input:
        expand(PATHS.table_tex, table=["table5"] if "table5" in TABLES else TABLES),
    default_target: True


rule all_tables:
    input:
        expand(PATHS.table_tex, table=TABLES),
        expand(PATHS.figure_pdf, figure=FIGURES),
        expand(PATHS.clir_table_tex, table=CLIR_TABLES),
        expand(PATHS.clir_figure_pdf, figure=CLIR_FIGURES),
        [PATHS.dense_table_tex.format(paper=paper, table=table) for paper, table in DENSE_TABLES],
        dense_plan.dense_figure_files(config),
        expand(PATHS.splade_table_tex, table=SPLADE_TABLES),
        expand(PATHS.scorecard_tex, report=plan.table_reports(config)),
        expand(PATHS.scorecard_pdf, report=plan.table_reports(config)),
        expand(PATHS.significance_tex, report=plan.table_reports(config)),
        PATHS.report_page,


rule all_dense_tables:
    input:
        [PATHS.dense_table_tex.format(paper=paper, table=table) for paper, table in DENSE_TABLES],
        dense_plan.dense_figure_files(config),


rule all_splade_tables:
    input:
        expand(PATHS.splade_table_tex, table=SPLADE_TABLES),


rule all_crates:
    input:
        expand(PATHS.crate, report=plan.crate_reports(config)),

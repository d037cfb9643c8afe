# PEFT-IR Repro: end-to-end reproduction of parameter-efficient fine-tuning of neural rankers.
#
#   snakemake --cores all                      # the default target: results/tables/table5.tex
#   snakemake --cores all all_tables           # every table and figure (Tables 3-7, Figure 4)
#   snakemake --cores all --configfile config.yaml config/paper.yaml
#
# DAG: download (ir_datasets) → folds → index → bm25 (Anserini) → train → rerank
#      → evaluate (pytrec_eval) → table (t-tests, LaTeX + JSON + CSV), figure (matplotlib)

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/bm25.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"


rule all:
    input:
        (
            "results/tables/table5.tex"
            if "table5" in TABLES
            else expand("results/tables/{table}.tex", table=TABLES)
        ),
    default_target: True


rule all_tables:
    input:
        expand("results/tables/{table}.tex", table=TABLES),
        expand("results/figures/{figure}.pdf", figure=FIGURES),

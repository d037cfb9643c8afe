# PEFT-IR Repro: end-to-end reproduction of parameter-efficient fine-tuning of neural rankers and retrievers.
#   snakemake --cores all                      # the default target: results/tables/table5.tex
#   snakemake --cores all all_tables           # every table and figure the config builds, with their scorecards
#   snakemake --profile slurm results/tables/table5.tex   # on a SLURM cluster (slurm/config.yaml)
#
# Shared rules are in workflow/rules/; each registered system (peftir.systems) brings its rules file, included when
# the config has its section. A rule runs workflow/scripts/<rule>.py, one function of the peftir package (the manual:
# docs/development/rules.md, and each system's DAG in docs/systems/).

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# Cheap rules run in Snakemake's own process on a cluster: each rules file names its own.
localrules:
    all,
    all_tables,


include: "workflow/rules/data.smk"
include: "workflow/rules/bm25.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/retrieval_tables.smk"
include: "workflow/rules/crates.smk"
include: "workflow/rules/reproduction.smk"


for system in SYSTEMS:

    include: system.rules_file(workflow.basedir)


rule all:
    input:
        plan.default_target(config),
    default_target: True


rule all_tables:
    input:
        list(REPORTS.values()),
        expand(PATHS.scorecard_tex, report=plan.table_reports(config)),
        expand(PATHS.scorecard_pdf, report=plan.table_reports(config)),
        expand(PATHS.significance_tex, report=plan.table_reports(config)),
        PATHS.report_page,


rule all_crates:
    input:
        expand(PATHS.crate, report=plan.crate_reports(config)),

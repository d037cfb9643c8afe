# Retrieval tables (peftir.reports.retrieval_tables), shared by the systems that search a collection: the dense
# retrieval papers' (results/tables/dptdr/, results/tables/condenser/) and, as its variant splade_table (splade.smk),
# the Adapters-SPLADE paper's (results/tables/splade-adapters/).
from peftir.dense import plan as dense_plan


rule dense_table:
    input:
        unpack(lambda wc: dense_plan.dense_report_runs(config, wc.paper, wc.table)),
    output:
        tex=report(
            PATHS.dense_table_tex,
            category="Tables",
            subcategory="Dense retrieval",
            caption="../report/dense_table.rst",
        ),
        json=PATHS.dense_table_json,
        csv=PATHS.dense_table_csv,
    log:
        PATHS.log("dense_table", "{paper}/{table}"),
    params:
        **params_of("dense_table", retrieval_table=("dense_table",)),
    threads: threads_of("dense_table")
    resources:
        **resources_of("dense_table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/dense_table.py"

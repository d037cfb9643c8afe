# The dense retrieval papers' tables: results/tables/dptdr/, results/tables/condenser/.


rule dense_table:
    input:
        unpack(lambda wc: plan.dense_report_runs(config, wc.paper, wc.table)),
    output:
        tex=report(PATHS.dense_table_tex, category="Tables", subcategory="Dense retrieval",
                   caption="../report/dense_table.rst"),
        json=PATHS.dense_table_json,
        csv=PATHS.dense_table_csv,
    log:
        PATHS.log("dense_table", "{paper}/{table}"),
    params:
        **params_of("dense_table"),
        code=code_of("dense_table"),
    threads: threads_of("dense_table")
    resources:
        **resources_of("dense_table"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/dense_table.py"

# Publishing: a table's or figure's Workflow Run RO-Crate (Provenance Run Crate), for WorkflowHub or
# Zenodo, which `peftir audit --crate` verifies in a checkout at its commit.


localrules:
    crate,


rule crate:
    input:
        report=lambda wc: plan.report_file(config, wc.report),
    output:
        crate=PATHS.crate,
    log:
        PATHS.log("crate", "{report}"),
    params:
        **params_of("crate", "publication"),
    threads: threads_of("crate")
    resources:
        **resources_of("crate"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/crate.py"

# Reproduced vs reported, for every table of every system: its scorecard against what its paper printed
# (config/reported/<paper>.yaml; per cell the difference, per method row Breuer et al.'s ER and ΔRI, an ER-vs-ΔRI
# figure) and its significance companion (per-query tests of the comparisons its stars make, corrected over the
# table's family). Both read the table's JSON twin, never its runs again.


localrules:
    scorecard,
    significance,
    report_page,


rule scorecard:
    input:
        unpack(lambda wc: plan.scorecard_input(config, wc.report)),
    output:
        tex=report(PATHS.scorecard_tex, category="Reproduced vs reported", caption="../report/scorecard.rst"),
        json=PATHS.scorecard_json,
        csv=PATHS.scorecard_csv,
        pdf=report(PATHS.scorecard_pdf, category="Reproduced vs reported", caption="../report/scorecard_figure.rst"),
        png=PATHS.scorecard_png,
    log:
        PATHS.log("scorecard", "{report}"),
    params:
        **params_of("scorecard", "reproduction"),
        reported=reported_of(lambda wc: [plan.reported_file(config, wc.report)]),
    threads: threads_of("scorecard")
    resources:
        **resources_of("scorecard"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/scorecard.py"


rule significance:
    input:
        table=lambda wc: plan.table_json(config, wc.report),
    output:
        tex=report(PATHS.significance_tex, category="Reproduced vs reported", caption="../report/significance.rst"),
        json=PATHS.significance_json,
        csv=PATHS.significance_csv,
    log:
        PATHS.log("significance", "{report}"),
    params:
        **params_of("significance", "significance", "stand_ins"),
        reported=reported_of(lambda wc: [plan.reported_file(config, wc.report)]),
    threads: threads_of("significance")
    resources:
        **resources_of("significance"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/significance.py"


# One page to read it all: every table with its scorecard and significance companion, the figures, each number
# one click from its provenance (results/report/index.html; tests/test_report_page.py, benchmarks/report_page.py).
rule report_page:
    input:
        unpack(lambda wc: plan.page_input(config)),
    output:
        page=report(PATHS.report_page, category="Reproduced vs reported", caption="../report/report_page.rst"),
    log:
        PATHS.log("report_page", "index"),
    params:
        **params_of("report_page", "budget"),
        reported=reported_of(lambda wc: plan.reported_files(config)),
    threads: threads_of("report_page")
    resources:
        **resources_of("report_page"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/report_page.py"

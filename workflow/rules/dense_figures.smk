# The dense retrieval papers' figures: Condenser's Figure 2, the [CLS] attention entropy per layer of each backbone
# as it comes and fine-tuned, on one sample of the dataset's passages (results/figures/condenser/).


rule attention_entropy:
    input:
        unpack(lambda wc: plan.attention_input(config, dict(wc.items()))),
    output:
        entropy=PATHS.attention_finetuned,
    log:
        PATHS.log("attention_entropy", f"{{paper}}/{{figure}}/{RETRIEVER}"),
    params:
        **params_of("attention"),
        code=code_of("attention_entropy"),
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
        unpack(lambda wc: plan.dense_figure_inputs(config, wc.paper, wc.figure)),
    output:
        pdf=report(PATHS.dense_figure_pdf, category="Figures", subcategory="Dense retrieval",
                   caption="../report/dense_figure.rst"),
        png=PATHS.dense_figure_png,
        json=PATHS.dense_figure_json,
        csv=PATHS.dense_figure_csv,
    log:
        PATHS.log("dense_figure", "{paper}/{figure}"),
    params:
        **params_of("dense_figure"),
        code=code_of("dense_figure"),
    threads: threads_of("dense_figure")
    resources:
        **resources_of("dense_figure"),
    conda:
        "../../envs/peftir.yaml"
    script:
        "../scripts/dense_figure.py"

"""Rule `answer_judgments` and its variants: the passages a run retrieved for the collection's test questions, judged
by DPR's answer matching, as the qrels its evaluation reads."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.data import folds
    from peftir.evaluation.answers import judge_run

    test = sorted(folds.test_queries(folds.read_folds(smk.input.folds)))
    judge_run(smk.input.run, smk.input.answers, smk.input.docs, smk.input.docs_lookup, test,
              smk.params.answer_judgments["depth"], smk.output.judgments)

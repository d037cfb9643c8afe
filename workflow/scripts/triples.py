"""Rule `triples`: a dataset's fixed training triples (MS MARCO), from its training split."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.data.triples import make_triples

    make_triples(smk.params.train_pairs, smk.input.qrels, smk.input.folds, smk.input.docs, smk.input.docs_lookup,
                 smk.output.triples)

"""Rule `clir_collection`: the cross-lingual test collection (documents, queries, qrels per language; folds)."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.collection import make_test_collection

    languages = smk.params.clir_languages
    make_test_collection(smk.params.clir_collection, dict(smk.input.items()), smk.params.clir_pins, languages,
                         dict(zip(languages, smk.output.docs)), dict(zip(languages, smk.output.queries)),
                         dict(zip(languages, smk.output.qrels)), smk.output.folds, smk.output.info)

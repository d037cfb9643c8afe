"""Rule `download`: a dataset's documents (and their lookup by id), queries and qrels exported from ir_datasets."""
from peftir.pipeline.job import job, noted

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.data.export import export_dataset

    noted(export_dataset(smk.params.export, smk.output.docs, smk.output.docs_lookup, smk.output.empty_docs,
                         smk.output.queries, smk.output.qrels, smk.output.info))

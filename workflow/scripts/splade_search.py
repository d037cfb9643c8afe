"""Rule `splade_search`: every query of a collection searched in its SPLADE impact index, each query's FLOPS."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.splade.search import search_trained

    print(search_trained(smk.params.splade, smk.params.splade_index, smk.input.index, smk.input.queries, smk.threads,
                         dict(smk.wildcards.items()), smk.output.run, smk.output.metadata, smk.output.flops,
                         smk.input.model, backbone=smk.input.get("backbone")))

"""Rule `index`: see peftir.jobs.retrieval.index."""
from peftir.runner import run

run("peftir.jobs.retrieval:index", snakemake)  # noqa: F821 (injected by Snakemake)

"""Rule `bm25`: see peftir.jobs.retrieval.search."""
from peftir.runner import run

run("peftir.jobs.retrieval:search", snakemake)  # noqa: F821 (injected by Snakemake)

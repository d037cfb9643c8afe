"""Rule `bm25`: see peftir.jobs.search."""
from peftir.runner import run

run("peftir.jobs:search", snakemake)  # noqa: F821 (injected by Snakemake)

"""Rule `index`: see peftir.jobs.index."""
from peftir.runner import run

run("peftir.jobs:index", snakemake)  # noqa: F821 (injected by Snakemake)

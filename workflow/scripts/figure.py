"""Rule `figure`: see peftir.jobs.figure."""
from peftir.runner import run

run("peftir.jobs:figure", snakemake)  # noqa: F821 (injected by Snakemake)

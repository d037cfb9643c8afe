"""Rule `evaluate`: see peftir.jobs.evaluate."""
from peftir.runner import run

run("peftir.jobs:evaluate", snakemake)  # noqa: F821 (injected by Snakemake)

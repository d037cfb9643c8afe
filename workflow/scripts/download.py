"""Rule `download`: see peftir.jobs.export."""
from peftir.runner import run

run("peftir.jobs:export", snakemake)  # noqa: F821 (injected by Snakemake)

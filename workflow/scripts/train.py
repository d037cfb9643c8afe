"""Rule `train`: see peftir.jobs.train."""
from peftir.runner import run

run("peftir.jobs:train", snakemake)  # noqa: F821 (injected by Snakemake)

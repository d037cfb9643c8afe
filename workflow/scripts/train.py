"""Rule `train`: see peftir.jobs.ranking.train."""
from peftir.runner import run

run("peftir.jobs.ranking:train", snakemake)  # noqa: F821 (injected by Snakemake)

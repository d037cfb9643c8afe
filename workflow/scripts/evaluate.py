"""Rule `evaluate`: see peftir.jobs.evaluation.evaluate."""
from peftir.runner import run

run("peftir.jobs.evaluation:evaluate", snakemake)  # noqa: F821 (injected by Snakemake)

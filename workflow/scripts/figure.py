"""Rule `figure`: see peftir.jobs.reports.figure."""
from peftir.runner import run

run("peftir.jobs.reports:figure", snakemake)  # noqa: F821 (injected by Snakemake)

"""Rule `table`: see peftir.jobs.reports.table."""
from peftir.runner import run

run("peftir.jobs.reports:table", snakemake)  # noqa: F821 (injected by Snakemake)

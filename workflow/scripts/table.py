"""Rule `table`: see peftir.jobs.table."""
from peftir.runner import run

run("peftir.jobs:table", snakemake)  # noqa: F821 (injected by Snakemake)

"""Rule `download`: see peftir.jobs.collection.export."""
from peftir.runner import run

run("peftir.jobs.collection:export", snakemake)  # noqa: F821 (injected by Snakemake)

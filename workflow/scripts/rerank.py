"""Rule `rerank`: see peftir.jobs.rerank_test."""
from peftir.runner import run

run("peftir.jobs:rerank_test", snakemake)  # noqa: F821 (injected by Snakemake)

"""Rule `rerank`: see peftir.jobs.ranking.rerank_test."""
from peftir.runner import run

run("peftir.jobs.ranking:rerank_test", snakemake)  # noqa: F821 (injected by Snakemake)

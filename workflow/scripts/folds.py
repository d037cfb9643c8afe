"""Rule `folds`: see peftir.jobs.folding.make_folds."""
from peftir.runner import run

run("peftir.jobs.folding:make_folds", snakemake)  # noqa: F821 (injected by Snakemake)

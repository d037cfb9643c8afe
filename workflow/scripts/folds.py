"""Rule `folds`: see peftir.jobs.make_folds."""
from peftir.runner import run

run("peftir.jobs:make_folds", snakemake)  # noqa: F821 (injected by Snakemake)

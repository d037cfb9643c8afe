"""Rule `index`: an Anserini index of the exported documents."""
from peftir.workflow.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from pathlib import Path

    from peftir.retrieval.anserini import build_index

    build_index(Path(smk.input.docs).parent, smk.output.index, threads=smk.threads)

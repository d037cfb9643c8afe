"""Rule `debian_package`: one Debian package fetched from its URL and checked against its sha256."""
from peftir.pipeline.job import job

with job(snakemake) as smk:  # noqa: F821 (snakemake is injected by Snakemake)
    from peftir.clir.debian import fetch_package

    fetch_package(smk.params.clir_package["url"], smk.params.clir_package["sha256"], smk.output.deb)

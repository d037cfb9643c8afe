"""The params a rule bundles, and a job's params as its record keeps them: what every job needs of the contract
when it writes its record, kept apart from ``peftir.pipeline.contract`` so that a job never reads the systems'
registry (``peftir.systems``) to start."""
from __future__ import annotations

from typing import Mapping

# Params that bundle several concerns' params by name: those of a rule whose `use rule` variants use other concerns
# (Snakemake's `with: params:` replaces a param by its name and keeps the base rule's others, so each variant replaces
# its one bundle: `evaluate`'s `evaluation`, `dense_table`'s `retrieval_table`). Records keep the concerns themselves.
BUNDLES = ("evaluation", "retrieval_table")


def recorded_params(params: Mapping[str, object]) -> dict[str, object]:
    """A job's params as its provenance record keeps them: a bundle's concerns in its place, each under its own name,
    so the audit recomputes every one from the config (``PARAMS``) whichever variant ran."""
    flat: dict[str, object] = {}
    for name, value in params.items():
        flat.update(value if name in BUNDLES else {name: value})
    return flat

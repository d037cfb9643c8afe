"""Every config section's relations, joined: each registered system declares its sections' (``peftir.systems``: its
``relations``; the machinery is ``peftir.contract.relations``), checked here before Snakemake plans, and the docs'
table is written from the same list (``markdown``; a test keeps ``docs/configuration/relations.md`` equal to it)."""
from __future__ import annotations

from ..contract.relations import Section
from ..systems import registered

SECTIONS: tuple[Section, ...] = tuple(section for system in registered() for section in system.relations)


def check(config: dict, datasets: list[str] | None = None) -> None:
    """Every relation of every section the config has, before any job: RelationError on the first broken one; of
    ``datasets`` alone where given (the collections some job reads: a dataset defined and not used is neither
    checked nor has its ir_datasets metadata read)."""
    if datasets is not None:
        config = {**config, "datasets": {name: spec for name, spec in config["datasets"].items() if name in datasets}}
    for section in SECTIONS:
        section.check(config)


def markdown() -> str:
    """The relations as the docs list them: a table per section."""
    return "\n".join(line for section in SECTIONS for line in section.markdown())

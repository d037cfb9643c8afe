"""Every config section's relations, joined: each system declares its section (``peftir.<system>.relations``; the
machinery is ``peftir.contract.relations``), checked here before Snakemake plans, and the docs' table is written
from the same list (``markdown``; a test keeps ``docs/configuration/relations.md`` equal to it)."""
from __future__ import annotations

from ..clir import relations as clir
from ..contract.relations import Section
from ..dense import relations as dense
from ..semi_siamese import relations as semi_siamese
from ..splade import relations as splade

SECTIONS: tuple[Section, ...] = (semi_siamese.SECTION, clir.SECTION, dense.PRETRAINING, dense.SECTION, splade.SECTION)


def check(config: dict) -> None:
    """Every relation of every section the config has, before any job: RelationError on the first broken one."""
    for section in SECTIONS:
        section.check(config)


def markdown() -> str:
    """The relations as the docs list them: a table per section."""
    return "\n".join(line for section in SECTIONS for line in section.markdown())

"""What the workflow plans across the systems: every table and figure by its crate name, the file each names, and
what one job of a rule asks the scheduler for. Each system plans its own jobs (``peftir.<system>.plan``)."""
from __future__ import annotations

from typing import Any, Mapping

from ..clir import plan as clir
from ..dense import plan as dense
from ..semi_siamese import plan as semi_siamese
from ..splade import plan as splade

Config = Mapping[str, Any]
SYSTEM_PLANS = (semi_siamese, clir, dense, splade)      # each plans its own jobs and names its own reports


def report_files(config: Config) -> dict[str, str]:
    """Every table's .tex and figure's .pdf of the config by its crate name (``table5``, ``modular-clir/table1``),
    each system's in turn (its plan's ``report_files``)."""
    return {name: path for system in SYSTEM_PLANS for name, path in system.report_files(config).items()}


def report_file(config: Config, report: str) -> str:
    """A table's .tex or a figure's .pdf, by crate name (what a crate is made of)."""
    files = report_files(config)
    if report not in files:
        raise ValueError(f"no table or figure named {report!r}; reports: {', '.join(files)}")
    return files[report]


def crate_reports(config: Config) -> list[str]:
    """Every table and figure of the config by its crate name."""
    return list(report_files(config))


def resources(config: Config, rule: str, wildcards: Mapping[str, str]) -> dict:
    """What one job of ``rule`` asks for: ``config.resources.<rule>`` with the dataset's overrides
    (``datasets.<name>.resources.<rule>``); threads, mem_mb, runtime (minutes), gpu, and gpu_model
    where set; a job that searches a collection (``target``) takes that collection's overrides. Partitions, account
    and QoS are site settings of the SLURM profile, not config."""
    dataset = wildcards.get("target") or wildcards.get("dataset")
    overrides = config["datasets"][dataset].get("resources", {}).get(rule, {}) if dataset else {}
    return {"gpu": 0, **config["resources"][rule], **overrides}

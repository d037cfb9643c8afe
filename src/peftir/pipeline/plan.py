"""What the workflow plans across the systems: every table and figure by its crate name, the file each names, and
what one job of a rule asks the scheduler for. Each registered system plans its own jobs (``peftir.systems``: its
``plan``)."""
from __future__ import annotations

import sys
from functools import cache
from typing import Any, Mapping

from ..data.export import check_available
from ..systems import in_run, registered
from .contract import PATHS

Config = Mapping[str, Any]
SYSTEM_PLANS = tuple(system.plan for system in registered())     # each plans its own jobs and names its own reports


def built_datasets(config: Config) -> list[str]:
    """The collections of `datasets` a job of the config may read (each system's plan's ``datasets``): what the
    checks before planning read ir_datasets' metadata of, and what the download jobs export."""
    return list(dict.fromkeys(name for system in SYSTEM_PLANS for name in system.datasets(config)))


def licensed_source(config: Config, wildcards: Mapping[str, str]) -> list[str]:
    """The ``download`` job's input: nothing it makes (ir_datasets finds a collection's files). Where the collection
    is licensed and its files are not on this machine, how to get them is said here, once a collection, when
    Snakemake plans the job; the job itself stops with the same words until they are there."""
    name = wildcards["dataset"]
    spec = config["datasets"][name]
    if spec.get("licence"):
        _say_missing(name, spec["irds"], spec["licence"])
    return []


@cache
def _say_missing(name: str, irds: str, licence: str) -> None:
    message = check_available({"irds": irds, "licence": licence})
    if message:
        print(f"rule download (datasets.{name}) needs a licensed collection that is not here. {message}",
              file=sys.stderr)


def report_files(config: Config) -> dict[str, str]:
    """Every table's .tex and figure's .pdf of the config by its crate name (``table5``, ``<paper>/table1``),
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


def table_reports(config: Config) -> list[str]:
    """Every table of the config by its crate name: what gets a scorecard and a significance companion."""
    return [name for name, path in report_files(config).items() if path.endswith(".tex")]


def figure_reports(config: Config) -> list[str]:
    """Every figure of the config by its crate name."""
    return [name for name, path in report_files(config).items() if path.endswith(".pdf")]


def page_input(config: Config) -> dict[str, list[str]]:
    """What the report page shows: each table's JSON twin, scorecard (and its figure) and significance companion,
    and each figure's PNG."""
    tables = table_reports(config)
    return {"tables": [table_json(config, report) for report in tables],
            "scorecards": [PATHS.scorecard_json.format(report=report) for report in tables],
            "scorecard_figures": [PATHS.scorecard_png.format(report=report) for report in tables],
            "significance": [PATHS.significance_json.format(report=report) for report in tables],
            "figures": [report_file(config, report).removesuffix(".pdf") + ".png" for report in figure_reports(config)]}


def default_target(config: Config) -> list[str]:
    """What ``snakemake`` builds with no target: the first system of the run that names a default (its
    ``default_target``), else every table and figure."""
    for system in in_run(config):
        if system.default_target:
            return system.default_target(config)
    return list(report_files(config).values())


def paper_table(report: str) -> tuple[str, str]:
    """A table's paper (its reported file's name) and its name there: ``<paper>/table3`` → (``<paper>``, ``table3``);
    a report without a folder is the root paper's (``table5``: the system whose ``root_paper`` is set)."""
    paper, _, table = report.rpartition("/")
    return paper or _root_paper(report), table


def _root_paper(report: str) -> str:
    for system in registered():
        if system.root_paper:
            return system.root_paper
    raise ValueError(f"report {report!r} has no paper folder and no registered system keeps its tables without one")


def reported_file(config: Config, report: str) -> str:
    """The reported file of a table's paper (<paper>.yaml in its system's ``reported`` folder, else in
    ``reproduction.reported``), relative to the workflow's checkout, or ``<package>:<path>`` where an installed
    system's package ships it: a file the workflow ships, tracked by content like its code
    (``records.workflow_file``)."""
    paper = paper_table(report)[0]
    folder = next((system.reported for system in registered()
                   if system.reported and paper in (*system.papers, system.root_paper)), None)
    return f"{folder or config['reproduction']['reported']}/{paper}.yaml"


def table_json(config: Config, report: str) -> str:
    """A table's JSON twin, beside its .tex."""
    return report_file(config, report).removesuffix(".tex") + ".json"


def scorecard_input(config: Config, report: str) -> dict[str, str | list[str]]:
    """A scorecard reads its table's JSON twin and, where the user gave them, the authors' original runs and their
    qrels (its paper's reported file comes in a param: ``reported_file``)."""
    original = config["reproduction"]["original_runs"].get(report)
    return {"table": table_json(config, report),
            **({"qrels": original["qrels"], "original": list(original["rows"].values())} if original else {})}


def reported_files(config: Config) -> list[str]:
    """The reported files of the papers whose tables the config builds (``reported_file``)."""
    return sorted({reported_file(config, report) for report in table_reports(config)})


def resources(config: Config, rule: str, wildcards: Mapping[str, str]) -> dict:
    """What one job of ``rule`` asks for: ``config.resources.<rule>`` with the dataset's overrides
    (``datasets.<name>.resources.<rule>``); threads, mem_mb, runtime (minutes), gpu, and gpu_model
    where set; a job that searches a collection (``target``) takes that collection's overrides. Partitions, account
    and QoS are site settings of the SLURM profile, not config."""
    dataset = wildcards.get("target") or wildcards.get("dataset")
    overrides = config["datasets"][dataset].get("resources", {}).get(rule, {}) if dataset else {}
    return {"gpu": 0, **config["resources"][rule], **overrides}


def report_cells(config: Config) -> dict[str, list[str]]:
    """Every cell id of every table the config builds, by the table's crate name, each system's in turn: what a
    reported file's cells must name (``peftir.reports.reported``)."""
    return {name: ids for system in SYSTEM_PLANS for name, ids in system.report_cells(config).items()}

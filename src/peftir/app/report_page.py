"""The report page's assembly (rule ``report_page``): which paper each table and figure belongs to, each paper's
source (its reported file), the commit and config files the results came from; ``peftir.reports.page`` renders it."""
from __future__ import annotations

import os

from ..pipeline.plan import paper_table
from ..provenance.records import (CONFIGFILES_ENV, config_file, git_state, read_workflow_file,
                                  workflow_checkout)
from ..reports.page import make_page
from ..reports.reported import load_reported
from ..reports.scorecard import EMBEDDED


def _report(path: str, folder: str, suffix: str) -> str:
    """A table's or figure's crate name from its file: ``results/tables/<paper>/table3.json`` → ``<paper>/table3``."""
    return path.removeprefix(f"results/{folder}/").removesuffix(suffix)


def make_report_page(tables: list[str], scorecards: list[str], scorecard_figures: list[str], significance: list[str],
                     figures: list[str], reported: list[dict], budget: str, output: str) -> None:
    """The page of every table (its JSON twin, scorecard and its figure, significance companion, in the same
    order) and figure (PNG), grouped by paper in the order the tables come; ``reported``: the papers' reported
    files (``records.workflow_file`` params), which name their sources."""
    sources = {(r := load_reported(read_workflow_file(entry))).paper: r.source for entry in reported}
    table_files = [{"report": report, "paper": paper_table(report)[0], "json": json_path, "scorecard": card,
                    "scorecard_png": png, "significance": companion}
                   for json_path, card, png, companion in zip(tables, scorecards, scorecard_figures, significance,
                                                              strict=True)
                   for report in [_report(json_path, "tables", ".json")]]
    figure_files = [{"report": report, "paper": paper_table(report)[0], "png": png,
                     "pdf": png.removesuffix(".png") + ".pdf"}
                    for png in figures for report in [_report(png, "figures", ".png")]]
    order = list(dict.fromkeys(f["paper"] for f in table_files + figure_files))
    checkout = workflow_checkout()
    git = git_state(checkout)
    configfiles = [config_file(path, checkout)["path"]
                   for path in os.environ.get(CONFIGFILES_ENV, "").split(os.pathsep) if path] or ["config.yaml"]
    about = {"commit": f"{git['commit']}{' (dirty)' if git['dirty'] else ''}", "configfiles": configfiles,
             "note": EMBEDDED if budget == "embedded" else ""}
    make_page(table_files, figure_files, {paper: sources.get(paper, "") for paper in order}, about, output)

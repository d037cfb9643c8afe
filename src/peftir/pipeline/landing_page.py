"""What ``snakemake --report`` shows on its landing page (``workflow/report/workflow.rst``).

The page needs the checkout's commit, the commit each built table came from, package versions
and the config. Snakemake cannot tell a parse that a report was asked for, so the Snakefile puts
a ``LandingPage`` in the config and nothing is computed (no git, no file reads) until the report's
template reads an attribute. Snakemake also pickles the config into every job's script, where the
page is of no use: it travels as an empty dict, so a job's process imports nothing for it.
"""
from __future__ import annotations

import json
from functools import cached_property

import yaml

from ..provenance.records import git_state, record_path, versions


class LandingPage:
    def __init__(self, checkout: str, configfiles: list[str], tables: dict[str, str], config: dict) -> None:
        """``tables``: each table's .tex by its crate name (``peftir.pipeline.plan.report_files``)."""
        self.checkout, self.configfiles, self._tables = checkout, configfiles, tables
        self._config = {key: value for key, value in config.items() if not isinstance(value, LandingPage)}

    def __reduce__(self) -> tuple[type, tuple]:
        return dict, ()

    @cached_property
    def git(self) -> dict:
        return git_state(self.checkout)

    @cached_property
    def tables(self) -> dict[str, dict]:
        """Each built table's commit, dirty flag and end time, from its provenance record."""
        built = {}
        for table, tex in self._tables.items():
            record = record_path(tex)
            if record.exists():
                recorded = json.loads(record.read_text())
                built[table] = {"commit": recorded["git"]["commit"], "dirty": recorded["git"]["dirty"],
                                "ended": recorded["ended"]}
        return built

    @cached_property
    def versions(self) -> dict[str, str | None]:
        return versions()

    @cached_property
    def config(self) -> str:
        return yaml.safe_dump(self._config, sort_keys=False, allow_unicode=True)

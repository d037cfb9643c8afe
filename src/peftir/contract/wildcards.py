"""What a wildcard may be, and the way back from a path to the artefact it is (its kind and its wildcards).

Each system's contract adds its own wildcards (``WILDCARDS``) and path patterns; ``Artefacts`` joins path
patterns with the constraints so that a path printed in a table, a record or a crate names its artefact."""
from __future__ import annotations

import dataclasses
import re
from typing import Mapping

from . import paths

NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"      # dataset, table and figure keys: never a path separator or ".."
KEY = r"[A-Za-z0-9][A-Za-z0-9_-]*"        # config keys a directory is named by (no dot: never ``<key>.json``)
LANGUAGE = r"[a-z]{2,3}"                  # ISO 639 codes
# a table's or figure's key: a NAME that is not one of a table's companions (``table5.repro``, ``table5.significance``)
REPORT_KEY = NAME + r"(?<!\.repro)(?<!\.significance)"
WILDCARDS = {"dataset": NAME, "target": NAME, "table": REPORT_KEY, "figure": REPORT_KEY, "fold": r"\d+", "seed": r"\d+",
             "pretrained": KEY, "backbone": KEY,
             "report": f"(?:{NAME}/)?{REPORT_KEY}"}     # a crate's report: ``table5``, ``dptdr/table3``


class Artefacts:
    """Path patterns by kind (a field of one of the ``*Paths`` dataclasses: ``run``, ``splade_metrics``…), read as
    attributes, and ``match`` from a path back to its kind and wildcards."""

    def __init__(self, paths: list[object], constraints: Mapping[str, str]) -> None:
        self._patterns: dict[str, str] = {}
        for group in paths:
            for kind, pattern in dataclasses.asdict(group).items():
                if kind in self._patterns:
                    raise ValueError(f"artefact {kind!r} is defined twice")
                self._patterns[kind] = pattern
        self._constraints = dict(constraints)
        self._compiled: dict[str, re.Pattern] | None = None

    def __getattr__(self, kind: str) -> str:
        try:
            return self.__dict__["_patterns"][kind]
        except KeyError:
            raise AttributeError(kind) from None

    log = staticmethod(paths.log)

    def kinds(self) -> list[str]:
        return list(self._patterns)

    def match(self, path: str) -> tuple[str, dict[str, str]] | None:
        """Which artefact ``path`` is (its kind) and its wildcards, or None."""
        if self._compiled is None:
            self._compiled = {kind: self._compile(pattern) for kind, pattern in self._patterns.items()}
        for kind, pattern in self._compiled.items():
            found = pattern.fullmatch(path)
            if found:
                return kind, found.groupdict()
        return None

    def _compile(self, pattern: str) -> re.Pattern:
        parts = re.split(r"\{(\w+)\}", pattern)
        return re.compile("".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>{self._constraints[part]})"
                                  for i, part in enumerate(parts)))

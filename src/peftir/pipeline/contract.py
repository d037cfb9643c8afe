"""The whole contract the workflow plans from: the core's shared artefacts, wildcards and params joined with each
registered system's (``peftir.systems``: its ``contract``). A rule names its paths (``PATHS.<kind>``) and the params
concerns it needs (``PARAMS``); the audit recomputes a record's params with the same functions."""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from ..contract import params as core
from ..contract.paths import CorePaths
from ..contract.params import ParamFunction
from ..contract.wildcards import REPORT_KEY, WILDCARDS, Artefacts
from ..systems import registered

SYSTEMS = tuple(system.contract for system in registered())     # in the systems' order: a path matches the first
PAPERS = tuple(paper for system in registered() for paper in system.papers)     # their folders under results/tables/


def wildcard_constraints() -> dict[str, str]:
    """The regular expression every wildcard must match (Snakemake's ``wildcard_constraints``)."""
    joined = {**WILDCARDS, "report": f"(?:(?:{'|'.join(PAPERS)})/)?{REPORT_KEY}"}
    for system in SYSTEMS:
        joined.update(system.WILDCARDS)
    return joined


def _params() -> Mapping[str, ParamFunction]:
    joined: dict[str, ParamFunction] = dict(core.PARAMS)
    for system in SYSTEMS:
        twice = sorted(set(joined) & set(system.PARAMS))
        if twice:
            raise ValueError(f"params concerns defined twice: {', '.join(twice)}")
        joined.update(system.PARAMS)
    return MappingProxyType(joined)


PATHS = Artefacts([CorePaths(), *(system.PATHS for system in SYSTEMS)], wildcard_constraints())
PARAMS = _params()


def artefact(path: str) -> tuple[str, dict[str, str]] | None:
    """Which artefact ``path`` is (its kind) and its wildcards, or None."""
    return PATHS.match(path)

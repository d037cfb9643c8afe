"""The systems the workflow runs, as they register themselves: each subpackage exports one ``System`` and names it
under the ``peftir.systems`` entry-point group of its distribution's metadata (``pyproject.toml``), so a system in
another installed package registers the same way, and the application (``peftir.pipeline``, ``peftir.app``, the
Snakefile) iterates ``registered()`` without naming any.

Nothing imports a system's registration (``peftir/<system>/system.py``) but the registry, which loads them when the
workflow plans, and in the few jobs that read the joined contract (a retrieval table, a crate): this module is
infrastructure to ``peftir.provenance.code_version``, so no job's code version holds it or a registration, and
registering or reordering systems reruns nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from .errors import ActionableError

GROUP = "peftir.systems"
Config = Mapping[str, Any]


class Contract(Protocol):
    """A system's artefacts (``PATHS``: a ``peftir.contract.paths`` kinds object), its wildcards' patterns and the
    params of each config concern its rules use (``peftir.contract.params.ParamFunction`` by name)."""

    PATHS: Any
    WILDCARDS: Mapping[str, str]
    PARAMS: Mapping[str, Callable[[Config, Mapping[str, str]], Any]]


class Plan(Protocol):
    """What a system plans from the config alone, before any job runs."""

    def datasets(self, config: Config) -> list[str]:
        """The collections of ``datasets`` its jobs read."""

    def report_files(self, config: Config) -> dict[str, str]:
        """Each of its tables' .tex and figures' .pdf, by crate name."""

    def report_cells(self, config: Config) -> dict[str, list[str]]:
        """Each of its tables' cell ids, by crate name."""


class Section(Protocol):
    """A config section's relations (``peftir.contract.relations.Section``)."""

    def check(self, config: Config) -> None: ...

    def markdown(self) -> list[str]: ...


@dataclass(frozen=True)
class CrateKinds:
    """How a crate (``peftir.app.crate``) treats a system's artefacts, by kind (its contract's ``PATHS`` fields):
    ``weights`` (referenced by hash unless ``--with-weights``), ``vectors`` (a corpus encoded by weights, a faiss or
    impact index: as large as weights, made from them), ``collection`` (a collection's text or index, made again
    byte for byte; a licensed one's never copied); ``licensed``: the params of its jobs that describe a collection
    with its ``licence`` (and its ``irds`` id, ``path`` or ``source``); ``steps``: its rules in the order a crate's
    workflow steps list them (its DAG's, roughly)."""

    weights: tuple[str, ...] = ()
    vectors: tuple[str, ...] = ()
    collection: tuple[str, ...] = ()
    licensed: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)      # one object per system: compared and hashed by identity
class System:
    """One system, as the workflow sees it.

    ``position`` orders the systems wherever order shows (a path is matched against the systems' artefacts in this
    order, reports are listed and the relations documented in it), since entry points come in no fixed order.
    ``checks`` pairs each config section the system owns with the function that checks it beyond the schema; the
    system is in a run when the config has one of them (its rules file included, its check run). ``rules`` is its
    Snakemake rules file, ``schema`` its fragment of the config schema (its sections, definitions and rules'
    resources: ``peftir.pipeline.config.joined_schema``): each relative to the workflow's checkout, or absolute (a
    system installed from another package ships its own). ``papers`` are its tables' folders under
    ``results/tables/``; ``root_paper`` is the paper whose tables sit there without a folder (one system at most).
    ``reported`` is the folder of its papers' reported numbers (``<paper>.yaml``, ``peftir.reports.reported``):
    relative to the checkout, or ``<package>:<folder>`` in its installed package (records name its files so,
    wherever the package is installed); None for the config's ``reproduction.reported`` (the systems the checkout
    holds).
    ``default_target`` gives the files ``snakemake`` builds with no target, where the system has a say.
    ``rescorers`` names, by rule, how ``peftir audit --rescore`` re-derives a run of that rule from its weights: the
    check (``reranking`` or ``first_stage``, ``peftir.app.rescore``) and the function scoring again, as
    ``module:function`` (imported only when a run is rescored). ``costs`` names, as ``module:attribute``, what it
    tells the cost plan (``peftir.execution.work.Costs``: its GPU rules' cost functions, its hub backbones' sizes;
    imported only by ``peftir plan``, since pricing a job imports torch): a GPU rule it leaves out is priced at
    nothing, which ``peftir plan`` says. ``audit`` names, as ``module:attribute``, what it teaches ``peftir audit``
    (``peftir.reports.auditor.Audits``: its reports' checks, its artefacts' chain; imported only when auditing): a
    report kind no system teaches is refused by the audit, named. ``manual`` lists its pages of the manual (``docs/``)
    by the navigation section they belong in, as (title, page) (``docs/hooks/systems_nav.py``). ``crate`` says how a
    crate treats its artefacts (``CrateKinds``)."""

    name: str
    position: int
    contract: Contract
    plan: Plan
    rules: str
    checks: Sequence[tuple[str, Callable[[Config], None]]]
    schema: str | None = None
    relations: Sequence[Section] = ()
    papers: Sequence[str] = ()
    root_paper: str | None = None
    reported: str | None = None
    default_target: Callable[[Config], list[str]] | None = None
    rescorers: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    costs: str | None = None
    audit: str | None = None
    manual: Mapping[str, Sequence[tuple[str, str]]] = field(default_factory=dict)
    crate: CrateKinds = CrateKinds()

    def in_run(self, config: Config) -> bool:
        """Whether a run of ``config`` has this system: whether the config has one of its sections."""
        return any(config.get(section) for section, _ in self.checks)

    @property
    def package(self) -> str:
        """The installed top-level package its modules are in (its contract's): what a job's code version follows
        into (``peftir.provenance.code_version``) beside ``peftir``."""
        return self.contract.__name__.partition(".")[0]

    def rules_file(self, checkout: str | Path) -> str:
        """Its rules file as the Snakefile includes it."""
        return str(Path(checkout) / self.rules)

    def schema_file(self, checkout: str | Path) -> str:
        """Its config schema fragment, where the config check reads it."""
        return str(Path(checkout) / self.schema)


class RegistryError(ActionableError):
    """The installed systems cannot be read: none registered, a name or position twice, two root papers."""


@cache
def registered() -> tuple[System, ...]:
    """Every system registered under ``peftir.systems``, in ``position`` order."""
    found = []
    for point in entry_points(group=GROUP):
        system = point.load()
        if not isinstance(system, System):
            raise RegistryError(f"entry point {point.name} = {point.value} ({GROUP}) is a {type(system).__name__}, "
                                f"not a peftir.systems.System")
        found.append(system)
    if not found:
        raise RegistryError(f"no system is registered under the entry-point group {GROUP}: the peftir package's "
                            f"metadata is older than its pyproject.toml; run `make install` (pip install -e .), "
                            f"in a conda environment Snakemake built before this version too")
    return _checked(found)


def _checked(systems: list[System]) -> tuple[System, ...]:
    for attribute in ("name", "position"):
        values = [getattr(system, attribute) for system in systems]
        twice = sorted({str(value) for value in values if values.count(value) > 1})
        if twice:
            raise RegistryError(f"two systems registered with the same {attribute}: {', '.join(twice)}")
    roots = [system.name for system in systems if system.root_paper]
    if len(roots) > 1:
        raise RegistryError(f"more than one system has its tables at results/tables/ without a folder: "
                            f"{', '.join(roots)}")
    return tuple(sorted(systems, key=lambda system: system.position))


def packages() -> tuple[str, ...]:
    """The packages a job's code version follows: ``peftir`` and each registered system's, sorted."""
    return tuple(sorted({"peftir", *(system.package for system in registered())}))


def in_run(config: Config) -> tuple[System, ...]:
    """The registered systems a run of ``config`` has (``System.in_run``)."""
    return tuple(system for system in registered() if system.in_run(config))


def load(target: str) -> Any:
    """What ``module:attribute`` names (a system's rescorer, its cost functions, its audit), imported now: a system
    names these rather than importing them, so that registering stays light."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)

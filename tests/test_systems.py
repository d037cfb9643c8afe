"""The systems registry (``peftir.systems``): what the installed package registers, in which order, what a broken
registration says, that no job's code version holds a registration (so adding or reordering systems reruns nothing)
and that a job starts without reading the registry."""
from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from peftir import systems
from peftir.app import crate
from peftir.pipeline import contract, plan, relations
from peftir.pipeline import config as config_module
from peftir.pipeline.config import SCHEMA, ConfigError, joined_schema, load_config, validate
from peftir.provenance.code_version import modules
from peftir.reports.auditor import Audits, ReportCheck
from peftir.systems import RegistryError, System, registered

REPO = Path(__file__).resolve().parents[1]
OUTSIDE_CHAINS = ("crate", "scorecard", "significance", "report_page")    # made of tables: in no table's chain


def test_the_four_systems_are_registered_in_their_positions():
    found = registered()
    assert [system.name for system in found] == ["semi_siamese", "clir", "dense", "splade"]
    assert [system.position for system in found] == sorted(system.position for system in found)
    for system in found:
        assert (REPO / system.rules).is_file(), f"{system.name}: no rules file {system.rules}"


def test_the_pipeline_joins_what_the_systems_register_in_their_order():
    """The order the docs' relations list, a path's match and the reports' listing have always had."""
    assert [module.__name__ for module in contract.SYSTEMS] == [
        "peftir.semi_siamese.contract", "peftir.clir.contract", "peftir.dense.contract", "peftir.splade.contract"]
    assert [module.__name__ for module in plan.SYSTEM_PLANS] == [
        "peftir.semi_siamese.plan", "peftir.clir.plan", "peftir.dense.plan", "peftir.splade.plan"]
    assert [section.key for section in relations.SECTIONS] == [
        "experiment", "modular_clir", "pretraining", "dense_retrieval", "sparse_retrieval"]
    assert contract.PAPERS == ("modular-clir", "dptdr", "condenser", "splade-adapters")
    assert plan.paper_table("table5") == ("semi-siamese", "table5")


def test_what_a_system_names_as_module_attribute_is_there():
    """Rescorers, cost functions and audits are imported only when an audit rescores or a plan prices: a wrong name
    would otherwise surface there first."""
    for system in registered():
        for rule, (check, target) in system.rescorers.items():
            assert check in ("reranking", "first_stage") and callable(systems.load(target)), (system.name, rule)
        if system.costs:
            costs = systems.load(system.costs)
            assert costs.rules and all(callable(function) for function in costs.rules.values()), system.name
        assert isinstance(systems.load(system.audit), Audits), system.name


def test_the_audit_checks_every_report_of_every_system_and_knows_each_kind_it_is_taught():
    """Each table and figure the embedded default makes (every system's) has a check the audit was taught, and every
    artefact kind a system's ``Audits`` names (its trace's edges, its trained and measured kinds) is one of the
    joined contract's: a misspelt kind would only cut a trace short."""
    from peftir.app.audit import AUDITS, CHECKS

    config = load_config(REPO, [])
    kinds = {contract.artefact(path)[0] for path in plan.report_files(config).values()}
    assert len(kinds) == 7 and kinds <= set(CHECKS)
    named = {*AUDITS.made_from, *(kind for kinds in AUDITS.made_from.values() for kind in kinds), *AUDITS.trained,
             *AUDITS.measured, *AUDITS.reports}
    assert sorted(kind for kind in named if not hasattr(contract.PATHS, kind)) == []


def test_a_report_kind_taught_twice_is_refused():
    check = ReportCheck("cell", lambda *_: [], lambda *_: ({}, ""))
    with pytest.raises(ValueError, match="reports table_tex twice"):
        Audits.joined([Audits(reports={"table_tex": check}), Audits(reports={"table_tex": check})])


def test_the_shared_datasets_are_checked_before_each_systems_sections(irds_home):
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["datasets"]["vaswani"]["irds"] = "no-such-collection"
    config["experiment"]["datasets"] = ["nothing"]
    with pytest.raises(ConfigError, match="^config key datasets.vaswani.irds = 'no-such-collection'"):
        validate(config, REPO / SCHEMA, REPO)


def test_each_systems_schema_fragment_is_joined_in_and_its_rules_need_resources():
    schema = joined_schema(REPO / SCHEMA, REPO)
    assert {"experiment", "modular_clir", "pretraining", "dense_retrieval", "sparse_retrieval"} <= set(
        schema["properties"])
    assert {"clir_system", "dense_cell", "splade_cell", "table_row"} <= set(schema["$defs"])
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    del config["resources"]["clir_table"]
    with pytest.raises(ConfigError, match=r"^config key resources: missing key\(s\) clir_table;"):
        validate(config, REPO / SCHEMA, REPO)


def test_a_section_two_systems_define_is_refused(monkeypatch):
    first = registered()[0]
    twin = dataclasses.replace(first, name="twin", position=first.position + 1)
    monkeypatch.setattr(config_module, "registered", lambda: (first, twin))
    with pytest.raises(RegistryError, match=r"semi_siamese.schema.yaml: \$defs table_row is defined by system "
                                            r"semi_siamese already"):
        joined_schema(REPO / SCHEMA, REPO)


def test_each_systems_pages_are_in_the_manuals_navigation(monkeypatch):
    spec = importlib.util.spec_from_file_location("systems_nav", REPO / "docs" / "hooks" / "systems_nav.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    nav = hook.systems_nav(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"])
    listed = {page for item in nav if isinstance(item, dict) for entries in item.values() if isinstance(entries, list)
              for entry in entries for page in entry.values()}
    pages = {page for system in registered() for entries in system.manual.values() for _, page in entries}
    assert len(pages) == 8 and pages <= listed and all((REPO / "docs" / page).is_file() for page in pages)
    stray = dataclasses.replace(registered()[0], manual={"Papers": [("Toy", "systems/toy.md")]})
    monkeypatch.setattr(hook, "registered", lambda: (stray,))
    with pytest.raises(ValueError, match="lists pages under 'Papers', which mkdocs.yml's nav does not have"):
        hook.systems_nav(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"])


def test_a_fragments_unknown_key_is_refused(monkeypatch, tmp_path):
    fragment = tmp_path / "toy.schema.yaml"
    fragment.write_text("resources: [toy]\nper-dataset: [toy]\n")
    toy = _system("toy", 99, schema=str(fragment))
    monkeypatch.setattr(config_module, "registered", lambda: (toy,))
    with pytest.raises(RegistryError, match=r"toy.schema.yaml: unknown key\(s\) per-dataset; allowed: required, "):
        joined_schema(REPO / SCHEMA, REPO)


def _system(name: str, position: int, **more) -> System:
    return System(name=name, position=position, contract=None, plan=None, rules=f"{name}.smk",
                  checks=((name, lambda config: None),), **more)


class _Point:
    def __init__(self, name: str, value: object) -> None:
        self.name, self.value, self._loaded = name, f"tests:{name}", value

    def load(self) -> object:
        return self._loaded


@pytest.fixture
def entry_points(monkeypatch):
    """Stand-in entry points for ``registered()`` (its cache cleared before and after)."""
    def use(*points: _Point) -> None:
        monkeypatch.setattr(systems, "entry_points", lambda group: list(points) if group == systems.GROUP else [])
        registered.cache_clear()

    yield use
    registered.cache_clear()


def test_systems_come_in_position_order_whatever_order_their_entry_points_have(entry_points):
    entry_points(_Point("b", _system("b", 20)), _Point("a", _system("a", 30)), _Point("c", _system("c", 10)))
    assert [system.name for system in registered()] == ["c", "b", "a"]


@pytest.mark.parametrize("points, says", [
    ([], "no system is registered under the entry-point group peftir.systems: the peftir package's metadata is "
         "older than its pyproject.toml; run `make install`"),
    ([_Point("a", _system("a", 10)), _Point("b", _system("a", 20))], "two systems registered with the same name: a"),
    ([_Point("a", _system("a", 10)), _Point("b", _system("b", 10))],
     "two systems registered with the same position: 10"),
    ([_Point("a", _system("a", 10, root_paper="x")), _Point("b", _system("b", 20, root_paper="y"))],
     "more than one system has its tables at results/tables/ without a folder: a, b"),
    ([_Point("a", object())], "entry point a = tests:a (peftir.systems) is a object, not a peftir.systems.System"),
])
def test_a_broken_registration_is_named(entry_points, points, says):
    entry_points(*points)
    with pytest.raises(RegistryError, match="^" + re.escape(says)):
        registered()


def test_a_system_is_in_a_run_when_the_config_has_one_of_its_sections():
    system = _system("a", 10)
    assert system.in_run({"a": {"key": 1}})
    assert not system.in_run({"b": {"key": 1}})
    assert not system.in_run({"a": None})       # an empty section, as a paper overlay leaves one


def test_no_code_version_holds_a_registration():
    """A job's ``code`` param digests every module its script imports: were a system's registration, its rescorer or
    its cost functions among them, adding or changing a system would rerun every finished job."""
    for script in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        held = [name for name in modules(str(script)) if name.rpartition(".")[2] in ("system", "rescore", "cost")]
        assert held == [], f"{script.name} imports {held}"


def test_a_job_starts_without_reading_the_registry():
    """Every script starts by importing the job context: it must not need the systems' entry points (a conda
    environment built from an older checkout has none), nor import every system."""
    started = ("import sys, peftir.pipeline.job; "
               "print(sorted({'peftir.systems', 'peftir.pipeline.contract'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", started], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_install_older_than_its_registrations_says_what_to_do():
    """Metadata without the entry points (an editable install from before them): the command says so, no traceback."""
    done = subprocess.run([sys.executable, "-c", "import importlib.metadata as m, sys; "
                           "m.entry_points = lambda group=None, **more: []; "
                           "from peftir.app.cli import main; sys.exit(main(['plan', 'all_tables']))"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("peftir: no system is registered under the entry-point group peftir.systems")


def test_a_crate_knows_every_kind_and_orders_every_rule_the_systems_register(monkeypatch):
    """Each kind a system's crate entry names is an artefact of the joined contract, and every rule of the workflow
    that a table's chain can hold has a place among the crate's steps (a rule without one would be listed last)."""
    spec = importlib.util.spec_from_file_location("rules_table", REPO / "docs" / "hooks" / "rules_table.py")
    rules_table = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, rules_table)      # as MkDocs does: its dataclasses look it up
    spec.loader.exec_module(rules_table)
    joined = crate.KINDS
    kinds = joined.weights + joined.vectors + joined.collection
    assert [kind for kind in kinds if not hasattr(contract.PATHS, kind)] == []
    rules = [rule.name for rule in rules_table.collect(REPO)
             if rule.runner is not None and rule.name not in OUTSIDE_CHAINS]
    assert [rule for rule in rules if rule not in joined.steps] == []
    assert len(set(joined.steps)) == len(joined.steps)

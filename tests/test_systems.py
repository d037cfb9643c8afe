"""The systems registry (``peftir.systems``): what the installed package registers, in which order, what a broken
registration says, and that registering never reaches a job (so adding or reordering systems reruns nothing)."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from peftir import systems
from peftir.app import crate
from peftir.pipeline import contract, plan, relations
from peftir.provenance.code_version import modules
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
    found = registered()
    assert contract.SYSTEMS == tuple(system.contract for system in found)
    assert plan.SYSTEM_PLANS == tuple(system.plan for system in found)
    assert relations.SECTIONS == tuple(section for system in found for section in system.relations)
    assert contract.PAPERS == tuple(paper for system in found for paper in system.papers)


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


def test_no_job_runs_the_registry_or_a_registration():
    """A job's ``code`` param digests every module its script runs: were the registry or a system's registration
    among them, adding a system would rerun every finished job."""
    registering = {"peftir.systems", *(f"peftir.{system.name}.system" for system in registered())}
    for script in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        ran = set(modules(str(script)))
        assert not ran & registering, f"{script.name} runs {sorted(ran & registering)}"
        assert not any(name.endswith(".rescore") for name in ran), f"{script.name} runs a rescorer"


def test_a_crate_knows_every_kind_and_orders_every_rule_the_systems_register(monkeypatch):
    """Each kind a system's crate entry names is an artefact of the joined contract, and every rule of the workflow
    that a table's chain can hold has a place among the crate's steps (a rule without one would be listed last)."""
    spec = importlib.util.spec_from_file_location("rules_table", REPO / "docs" / "hooks" / "rules_table.py")
    rules_table = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, rules_table)      # as MkDocs does: its dataclasses look it up
    spec.loader.exec_module(rules_table)
    unknown = [kind for kind in crate.WEIGHTS + crate.VECTORS + crate.COLLECTION if not hasattr(contract.PATHS, kind)]
    assert not unknown
    rules = [rule.name for rule in rules_table.collect(REPO)
             if rule.runner is not None and rule.name not in OUTSIDE_CHAINS]
    assert [rule for rule in rules if rule not in crate.STEP_ORDER] == []
    assert len(set(crate.STEP_ORDER)) == len(crate.STEP_ORDER)

"""The package's floors hold: no module imports from a floor above its own, and the subpackages' imports form no
cycle (so no two subpackages import each other). The floors are written down here once; the docs
(``docs/development/index.md``, "Floors") show this table, and a test keeps the two equal."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "peftir"
# Bottom to top. A subpackage (or top-level module) belongs to exactly one floor.
FLOORS: dict[str, tuple[str, ...]] = {
    "base": ("errors", "files", "progress_log", "systems"),
    "core": ("contract", "data", "execution", "evaluation", "provenance", "retrieval", "reports"),
    "modelling": ("models", "training"),
    "systems": ("semi_siamese", "splade", "clir", "dense"),
    "application": ("pipeline", "app"),
}
LEVEL = {unit: level for level, units in enumerate(FLOORS.values()) for unit in units}


def _unit(module: str) -> str:
    """``peftir.clir.plan`` → ``clir``; ``peftir.files`` → ``files``."""
    return module.split(".")[1]


def _module(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def package_imports() -> list[tuple[str, str, int]]:
    """Every import of a peftir module by a peftir module, lazy ones included: (importer, imported, line)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module, is_package = _module(path)
        if module == "peftir":
            continue
        here = module.split(".") if is_package else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target] if target != "peftir" else [f"peftir.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found += [(module, t, node.lineno) for t in targets if t.startswith("peftir.")]
    return found


def test_every_subpackage_and_module_has_a_floor():
    units = {_unit(_module(path)[0]) for path in PACKAGE.rglob("*.py") if _module(path)[0] != "peftir"}
    assert units == set(LEVEL), f"without a floor: {sorted(units - set(LEVEL))}; gone: {sorted(set(LEVEL) - units)}"


def test_no_module_imports_from_a_floor_above_its_own():
    upward = [f"{importer}:{line} imports {imported} ({_floor(imported)} above {_floor(importer)})"
              for importer, imported, line in package_imports() if LEVEL[_unit(imported)] > LEVEL[_unit(importer)]]
    assert not upward, "\n".join(upward)


def _floor(module: str) -> str:
    return list(FLOORS)[LEVEL[_unit(module)]]


def subpackage_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {unit: set() for unit in LEVEL}
    for importer, imported, _ in package_imports():
        if _unit(importer) != _unit(imported):
            graph[_unit(importer)].add(_unit(imported))
    return graph


def test_the_subpackages_imports_form_no_cycle():
    graph = subpackage_graph()
    mutual = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph[b]})
    assert not mutual, f"subpackages that import each other: {mutual}"
    done: set[str] = set()

    def visit(unit: str, path: list[str]) -> None:
        if unit in path:
            pytest.fail(f"import cycle: {' → '.join(path[path.index(unit):] + [unit])}")
        if unit not in done:
            for other in sorted(graph[unit]):
                visit(other, path + [unit])
            done.add(unit)

    for unit in sorted(graph):
        visit(unit, [])


def test_the_manual_shows_these_floors():
    """The Development page's table names the same floors, in order, with the same subpackages."""
    page = (PACKAGE.parents[1] / "docs" / "development" / "index.md").read_text()
    section = page.split("## Floors", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "`" in line]
    shown = {floor.strip(): tuple(name.strip(" `") for name in names.split(",")) for floor, names in rows}
    assert shown == FLOORS


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The scan reads lazy imports inside functions too: a core module importing a system is caught."""
    fake = tmp_path / "peftir"
    (fake / "data").mkdir(parents=True)
    (fake / "clir").mkdir()
    (fake / "data" / "x.py").write_text("def f():\n    from ..clir import plan\n")
    (fake / "clir" / "plan.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert ("peftir.data.x", "peftir.clir", 2) in package_imports()

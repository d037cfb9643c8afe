"""Which of the package's source files a job runs: the import closure of its job module.

Snakemake reruns a job when its ``script:`` changes, but not when a module the
script imports changes. The workflow therefore lists, as each rule's ``code``
input, the package files its job module imports (directly or not, at module
level or inside functions), found by reading their import statements; editing
one reruns exactly the rules that use it. Standard library only, so the
Snakefile can call it without importing torch.
"""
from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

PACKAGE = "peftir"


def _root() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {PACKAGE!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def source_file(module: str) -> Path | None:
    """The file of ``module`` (a dotted name inside the package), or None if it names no module."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = _root().joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported(module: str, path: Path) -> set[str]:
    """Dotted names of the package modules that ``module`` (at ``path``) imports."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in names if source_file(name)}


def _parents(module: str) -> list[str]:
    """Packages Python runs on the way to ``module`` (their ``__init__``)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@cache
def modules_used(module: str) -> tuple[str, ...]:
    """Sorted source files of ``module`` and every package module it imports, transitively."""
    seen: set[str] = set()
    pending = [module]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        path = source_file(name)
        if path is None:
            raise ImportError(f"{name!r} is not a module of {PACKAGE}")
        seen.add(name)
        pending.extend(_parents(name))
        pending.extend(_imported(name, path))
    return tuple(sorted(str(source_file(name)) for name in seen))

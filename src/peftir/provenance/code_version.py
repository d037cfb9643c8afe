"""The version of the code a rule runs, by content: what changes it reruns the rule, and nothing else.

A rule's code is its workflow script plus every package module the script imports, directly or
not (imports inside functions included), except the infrastructure that only runs, logs or
records jobs (``INFRASTRUCTURE``). Each file is reduced to its syntax tree without docstrings and
without statements that only log (``print(...)``, ``log.info(...)``…), and hashed. The workflow
passes the resulting ``{module: digest}`` to every job as its ``code`` param, so Snakemake reruns
a job when the code that computes its result changes (loss, ranker, method, metric, t-test) and
not when a comment, a docstring, a log message or the provenance code does; the audit compares a
record's digests with the checkout's to name the module that changed. Standard library only.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import cache
from pathlib import Path

PACKAGE = "peftir"
# Running, logging and recording jobs does not change what they compute; nor does which systems are registered.
INFRASTRUCTURE = ("peftir.pipeline", "peftir.app", "peftir.provenance", "peftir.files", "peftir.systems")
LOGGING_CALLS = {"debug", "info", "warning", "error", "exception"}


def source_file(module: str) -> Path | None:
    """The file of a package module (dotted name), or None if it names none."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {PACKAGE!r} is not installed")
    base = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _infrastructure(module: str) -> bool:
    return any(module == root or module.startswith(root + ".") for root in INFRASTRUCTURE)


def _imports(tree: ast.Module, module: str | None, is_package: bool) -> set[str]:
    """Package modules named by the import statements of ``tree`` (``module``: its dotted name).

    ``from m import name`` counts ``m`` and, where it is a submodule, ``m.name``; a package module
    that does not exist is an error rather than code left out of the version.
    """
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = (module or "").split(".")
                anchor = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            named = [base]
            modules.update(f"{base}.{alias.name}" for alias in node.names if source_file(f"{base}.{alias.name}"))
        else:
            continue
        for name in named:
            if name.split(".")[0] == PACKAGE:
                if source_file(name) is None:
                    raise ImportError(f"{name!r} is not a module of {PACKAGE}")
                modules.add(name)
    return modules


def _parents(module: str) -> list[str]:
    """Packages Python runs on the way to ``module`` (their ``__init__``)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


class _Normalise(ast.NodeTransformer):
    """Drop what does not change a result: docstrings and statements that only log."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            statements = getattr(node, name, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                kept = [stmt for stmt in statements if not _is_docstring_or_log(stmt)]
                setattr(node, name, kept or ([] if name != "body" or isinstance(node, ast.Module) else [ast.Pass()]))
        return node


def _is_docstring_or_log(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Expr):
        return False
    value = stmt.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return True
    if isinstance(value, ast.Call):
        function = value.func
        if isinstance(function, ast.Name) and function.id == "print":
            return True
        if isinstance(function, ast.Attribute) and function.attr in LOGGING_CALLS \
                and isinstance(function.value, ast.Name) and function.value.id in ("log", "logger", "logging"):
            return True
    return False


@cache
def digest(path: Path) -> str:
    """sha256 of a source file's syntax tree without docstrings and logging statements."""
    normalised = _Normalise().visit(ast.parse(path.read_text(), str(path)))
    return hashlib.sha256(ast.dump(normalised, annotate_fields=False).encode()).hexdigest()


@cache
def modules(script: str) -> tuple[str, ...]:
    """The package modules (dotted names, sorted) that ``script`` runs, infrastructure excluded."""
    seen: set[str] = set()
    pending = sorted(_imports(ast.parse(Path(script).read_text(), script), None, False))
    while pending:
        name = pending.pop()
        if name in seen or _infrastructure(name):
            continue
        path = source_file(name)
        seen.add(name)
        pending.extend(_parents(name))
        pending.extend(_imports(ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py"))
    return tuple(sorted(seen))


@cache
def code_version(script: str, relative_to: str) -> dict:
    """A rule's ``code`` param: its script (relative to the checkout) and the digest of the script and
    of each package module it runs."""
    script_path = Path(script)
    return {"script": script_path.resolve().relative_to(Path(relative_to).resolve()).as_posix(),
            "digests": {"script": digest(script_path.resolve()),
                        **{name: digest(source_file(name)) for name in modules(str(script_path))}}}


def changed(recorded: dict, current: dict) -> list[str]:
    """The modules (or ``script``) whose digests differ between two ``code_version`` results."""
    old, new = recorded.get("digests", {}), current.get("digests", {})
    return sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))

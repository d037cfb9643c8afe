"""The version of the code a rule runs, by content: what changes it reruns the rule, and nothing else.

A rule's code is its workflow script plus every package module the script imports, directly or
not (imports inside functions included), except the infrastructure that only runs, logs or
records jobs (``INFRASTRUCTURE``). The packages followed are ``peftir`` and those of the systems
installed beside it (``packages``: a system shipped in another distribution brings its own
modules and scripts, which count alike). Each file is reduced to its syntax tree without
docstrings and without statements that only log (``print(...)``, ``log.info(...)``…, and ``peftir.progress_log``'s
import and ``progress_log.*(...)`` calls), and hashed. The workflow
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
INFRASTRUCTURE = ("peftir.pipeline", "peftir.app", "peftir.provenance", "peftir.files", "peftir.systems",
                  "peftir.progress_log")
LOGGING_CALLS = {"debug", "info", "warning", "error", "exception"}
PROGRESS = "progress_log"   # peftir.progress_log, imported as ``from .. import progress_log``: its calls only log


Packages = tuple[str, ...]


def package_directory(package: str) -> Path:
    """Where an installed top-level package's files are."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {package!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def source_file(module: str, packages: Packages = (PACKAGE,)) -> Path | None:
    """The file of a module (dotted name) of one of ``packages``, or None if it names none."""
    parts = module.split(".")
    if parts[0] not in packages:
        return None
    base = package_directory(parts[0]).joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _infrastructure(module: str) -> bool:
    return any(module == root or module.startswith(root + ".") for root in INFRASTRUCTURE)


def _imports(tree: ast.Module, module: str | None, is_package: bool, packages: Packages) -> set[str]:
    """Modules of ``packages`` named by the import statements of ``tree`` (``module``: its dotted name).

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
            modules.update(f"{base}.{alias.name}" for alias in node.names
                           if source_file(f"{base}.{alias.name}", packages))
        else:
            continue
        for name in named:
            if name.split(".")[0] in packages:
                if source_file(name, packages) is None:
                    raise ImportError(f"{name!r} is not a module of {name.split('.')[0]}")
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
    if isinstance(stmt, ast.ImportFrom):
        return stmt.module in (None, PACKAGE) and [alias.name for alias in stmt.names] == [PROGRESS] \
            and not any(alias.asname for alias in stmt.names)
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
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) \
                and function.value.id == PROGRESS:
            return True
    return False


@cache
def digest(path: Path) -> str:
    """sha256 of a source file's syntax tree without docstrings and logging statements."""
    normalised = _Normalise().visit(ast.parse(path.read_text(), str(path)))
    return hashlib.sha256(ast.dump(normalised, annotate_fields=False).encode()).hexdigest()


@cache
def modules(script: str, packages: Packages = (PACKAGE,)) -> tuple[str, ...]:
    """The modules of ``packages`` (dotted names, sorted) that ``script`` runs, infrastructure excluded."""
    seen: set[str] = set()
    pending = sorted(_imports(ast.parse(Path(script).read_text(), script), None, False, packages))
    while pending:
        name = pending.pop()
        if name in seen or _infrastructure(name):
            continue
        path = source_file(name, packages)
        seen.add(name)
        pending.extend(_parents(name))
        pending.extend(_imports(ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", packages))
    return tuple(sorted(seen))


def script_name(script: Path, checkout: Path, packages: Packages) -> str:
    """How a record names a script: ``<package>:<path in the package>`` for one a system's package ships (wherever
    it is installed: in a virtual environment inside the checkout too), else its path relative to the checkout
    (``shipped_path`` reads either back)."""
    script = script.resolve()
    for package in packages:
        if package != PACKAGE and script.is_relative_to(package_directory(package)):
            return f"{package}:{script.relative_to(package_directory(package)).as_posix()}"
    if script.is_relative_to(checkout.resolve()):
        return script.relative_to(checkout.resolve()).as_posix()
    raise ValueError(f"{script}: neither in the workflow's checkout {checkout} nor in a package of {packages}")


def shipped_path(name: str, checkout: str | Path) -> Path:
    """A file the workflow ships (a script, a paper's reported numbers) as a record names it: relative to
    ``checkout``, or ``<package>:<path>`` in an installed system's package."""
    package, separator, inside = name.partition(":")
    return package_directory(package) / inside if separator else Path(checkout) / name


@cache
def code_version(script: str, relative_to: str, packages: Packages = (PACKAGE,)) -> dict:
    """A rule's ``code`` param: its script (``script_name``) and the digest of the script and of each module of
    ``packages`` it runs."""
    path = Path(script)
    return {"script": script_name(path, Path(relative_to), packages),
            "digests": {"script": digest(path.resolve()),
                        **{name: digest(source_file(name, packages)) for name in modules(str(path), packages)}}}


def changed(recorded: dict, current: dict) -> list[str]:
    """The modules (or ``script``) whose digests differ between two ``code_version`` results."""
    old, new = recorded.get("digests", {}), current.get("digests", {})
    return sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))

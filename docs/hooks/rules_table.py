"""MkDocs hook: the rule → script → function table, generated from the workflow's files at build time.

Nothing here is typed by hand: every ``rule NAME:`` (and ``checkpoint NAME:``) and every ``use rule PARENT as NAME``
of the Snakefile and of ``workflow/rules/*.smk``, the script each rule runs (its ``script:`` directive, resolved
as Snakemake resolves it: relative to the file that holds the rule; a ``use rule`` variant runs its parent's unless
it names its own) and, from each script's syntax tree, the ``peftir`` functions it imports and calls. A script's
*functions* are the outermost calls of names it imports from ``peftir`` (``train_ranker(...)``, also inside
``print(...)``), outside the ``with job(snakemake)`` header; calls nested in their arguments
(``Collection.of(...)``, ``job_key(smk)``) are listed as *helpers*.

The page ``development/rules.md`` holds the marker below, which :func:`on_page_markdown` replaces with the table.
``tests/test_docs.py`` imports this file to check the table against Snakemake's own list of rules and every
function against the package (``resolve``).
"""
from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from peftir.systems import registered

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- rules-table -->"

_HEADER = re.compile(r"^(?P<indent>[ \t]*)(?:(?:rule|checkpoint)\s+(?P<name>\w+)\s*:"
                     r"|use\s+rule\s+(?P<parent>\w+)(?:\s+from\s+\w+)?\s+as\s+(?P<variant>\w+)\b)")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]+)(?P<key>\w+)\s*:(?P<rest>.*)$")
_INCLUDE = re.compile(r"^\s*include\s*:\s*(?P<value>.+?)\s*(?:#.*)?$")
_RUNNERS = ("script", "run", "shell", "notebook", "wrapper", "cwl", "template_engine")


@dataclass
class Rule:
    """One rule as the files declare it."""
    name: str
    file: str                      # the file that declares it, relative to the repository
    line: int
    parent: str | None = None      # ``use rule PARENT as NAME``
    runner: str | None = None      # the directive that runs it: script, run, shell, …; None: a target rule
    script: str | None = None      # the script it runs, relative to the repository
    functions: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    summary: str = ""


def _indent(text: str) -> int:
    return len(text.expandtabs(4)) - len(text.expandtabs(4).lstrip())


def _strings(expression: str) -> list[str]:
    """The string literals of a directive's value (a literal, or a helper called with one)."""
    try:
        tree = ast.parse("(\n" + expression + "\n)", mode="eval")
    except SyntaxError:
        return re.findall(r"""["']([^"']+)["']""", expression)
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _script_path(values: list[str], declared_in: Path, repo: Path) -> str | None:
    """The first of a ``script:`` value's strings that names a file: relative to the rule's file (Snakemake's
    rule), the repository, or ``workflow/scripts/`` (with or without ``.py``)."""
    for value in values:
        for candidate in (declared_in.parent / value, repo / value, repo / "workflow" / "scripts" / value,
                          repo / "workflow" / "scripts" / f"{value}.py"):
            if candidate.is_file():
                return candidate.resolve().relative_to(repo.resolve()).as_posix()
    return None


def parse_rules_file(path: Path, repo: Path = REPO) -> list[Rule]:
    """The rules a Snakefile or ``.smk`` file declares, each with the directive that runs it."""
    lines = path.read_text().splitlines()
    rules: list[Rule] = []
    number = 0
    while number < len(lines):
        header = _HEADER.match(lines[number])
        if not header:
            number += 1
            continue
        name = header["name"] or header["variant"]
        rule = Rule(name, path.resolve().relative_to(repo.resolve()).as_posix(), number + 1, parent=header["parent"])
        depth = _indent(header["indent"])
        body_start = number = number + 1
        while number < len(lines) and (not lines[number].strip() or lines[number].lstrip().startswith("#")
                                       or _indent(lines[number]) > depth):
            number += 1
        body = lines[body_start:number]
        directives = [(i, match) for i, text in enumerate(body) if (match := _DIRECTIVE.match(text))]
        level = min((_indent(m["indent"]) for _, m in directives), default=0)
        for i, match in directives:
            if _indent(match["indent"]) != level or match["key"] not in _RUNNERS:
                continue
            rule.runner = match["key"]
            if match["key"] == "script":
                value = [match["rest"]]
                for following in body[i + 1:]:
                    if following.strip() and _indent(following) <= level:
                        break
                    value.append(following)
                # a value built by a helper from no literal: the script named after the rule, the workflow's convention
                rule.script = _script_path(_strings("\n".join(value)) + [f"{name}.py"], path, repo)
            break
        rules.append(rule)
    return rules


def rules_files(repo: Path = REPO) -> list[Path]:
    """The Snakefile's included rules files in the order it includes them, the registered systems' in theirs, then any
    other ``workflow/rules/*.smk``, then the Snakefile itself (its target rules)."""
    snakefile = repo / "Snakefile"
    ordered: list[Path] = []
    if snakefile.is_file():
        for line in snakefile.read_text().splitlines():
            if (match := _INCLUDE.match(line)):
                for value in _strings(match["value"]):
                    candidate = (repo / value).resolve()
                    if candidate.is_file() and candidate not in ordered:
                        ordered.append(candidate)
    for system in registered():
        candidate = Path(system.rules_file(repo)).resolve()
        if candidate.is_file() and candidate not in ordered:
            ordered.append(candidate)
    ordered += [path.resolve() for path in sorted((repo / "workflow" / "rules").glob("*.smk"))
                if path.resolve() not in ordered]
    if snakefile.is_file():
        ordered.append(snakefile.resolve())
    return ordered


def _dotted(node: ast.AST, imported: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return imported.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, imported)
        return f"{base}.{node.attr}" if base else None
    return None


def _statements(body: list[ast.stmt]):
    """A script's statements, inside ``with``, ``if`` and ``try`` blocks too; the ``with`` headers left out."""
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, (ast.With, ast.If, ast.Try, ast.For)):
            for block in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(statement, block, []))
            for handler in getattr(statement, "handlers", []):
                yield from _statements(handler.body)
        else:
            yield statement


def script_calls(path: Path) -> tuple[list[str], list[str], str]:
    """A script's ``peftir`` functions (outermost calls), helpers (calls nested in them) and docstring summary."""
    tree = ast.parse(path.read_text(), filename=str(path))
    imported: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "peftir":
            imported.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "peftir":
                    imported[alias.asname or "peftir"] = alias.name if alias.asname else "peftir"
    functions: list[str] = []
    helpers: list[str] = []

    def visit(node: ast.AST, nested: bool) -> None:
        if isinstance(node, ast.Call) and (name := _dotted(node.func, imported)):
            target = helpers if nested else functions
            if name not in target:
                target.append(name)
            nested = True
        for child in ast.iter_child_nodes(node):
            visit(child, nested)

    for statement in _statements(tree.body):
        visit(statement, False)
    helpers = [name for name in helpers if name not in functions]
    docstring = (ast.get_docstring(tree) or "").strip()
    summary = " ".join(docstring.split("\n\n")[0].split())
    summary = re.sub(r"^Rules?\s+[^:]*:\s*", "", summary)     # "Rule `train`: …" → "…"
    return functions, helpers, summary


def collect(repo: Path = REPO) -> list[Rule]:
    """Every rule of the workflow's files, with its script, functions and helpers (a variant's from its parent)."""
    rules = [rule for path in rules_files(repo) for rule in parse_rules_file(path, repo)]
    by_name = {rule.name: rule for rule in rules}
    for rule in rules:
        seen = {rule.name}
        parent = by_name.get(rule.parent) if rule.parent else None
        while rule.runner is None and parent is not None and parent.name not in seen:
            seen.add(parent.name)
            rule.runner, rule.script = parent.runner, parent.script
            parent = by_name.get(parent.parent) if parent.parent else None
    scripts: dict[str, tuple[list[str], list[str], str]] = {}
    for rule in rules:
        if rule.script:
            if rule.script not in scripts:
                scripts[rule.script] = script_calls(repo / rule.script)
            functions, helpers, summary = scripts[rule.script]
            rule.functions, rule.helpers, rule.summary = list(functions), list(helpers), summary
    return rules


def resolve(dotted: str) -> object:
    """The object a dotted name gives: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ImportError(f"no module of {dotted} can be imported")


def _cell(items: list[str]) -> str:
    return "<br>".join(f"`{item}`" for item in items) or "–"


def markdown(rules: list[Rule]) -> str:
    """The table, one section per rules file."""
    files: dict[str, list[Rule]] = {}
    for rule in rules:
        files.setdefault(rule.file, []).append(rule)
    scripts = {rule.script for rule in rules if rule.script}
    out = [(f"{len(rules)} rules in {len(files)} files, running {len(scripts)} scripts "
            f"(generated from the files when the site was built)."), ""]
    for name, declared in files.items():
        out += [f"## `{name}`", "", "| rule | script | functions | helpers | what it does |",
                "| --- | --- | --- | --- | --- |"]
        for rule in declared:
            label = f"`{rule.name}`" + (f" (`use rule {rule.parent}`)" if rule.parent else "")
            if rule.script:
                script = f"`{rule.script}`"
            elif rule.runner:
                script = f"({rule.runner}: not found)" if rule.runner == "script" else f"({rule.runner})"
            else:
                script = "– (a target: inputs only)"
            summary = rule.summary.replace("|", "\\|")
            out.append(f"| {label} | {script} | {_cell(rule.functions)} | {_cell(rule.helpers)} | {summary} |")
        out.append("")
    return "\n".join(out)


def on_page_markdown(text: str, page, config, files) -> str:   # MkDocs' hook signature
    if MARKER not in text:
        return text
    return text.replace(MARKER, markdown(collect(REPO)))

"""Every reference the manual makes to a file, a module or a name of the repository resolves, so moving or renaming
code without the manual fails here. Read from the inline code spans of docs/**/*.md and README.md (fenced blocks,
spans with spaces, `results/…` and `../…` left out, and the columns of a fidelity table about the paper or the
released code):
  - a path: from the repository root (`workflow/…`, `config/…`, `tests/…`, `benchmarks/…`, `src/…`, a root
    file),
    `peftir/…` (under src/), otherwise under src/peftir/ or under the subpackage an earlier `peftir/<pkg>/…` span of
    the same paragraph or table row names; a bare `x.py`/`.smk`/`.yaml`: a file of that name; globs, `<x>`, `{a,b}`
    and `…` as wildcards; `path:N` or `path:N-M`: the file has N (M) lines;
  - `pkg/module.name`: a name module.py of src/peftir/pkg defines;
  - a dotted name: a module of the package (`peftir.a.b`, or any tail of its name: `encoder`, `data.pretraining_text`,
    `peftir.<system>.plan`) then its attributes, read with ast (nothing imported); `Class.member` of a package class
    (inherited and `self.x` members too); or else a key of config.yaml, config/*.yaml or the schema, matched at any
    depth;
  - `` `x.py` `name` ``: a name that file defines;
  - a code-like bare name (snake_case with `_`, camelCase, ALL_CAPS of 4+): a word of the code or the configs."""
import ast
import fnmatch
import functools
import re
from pathlib import Path

import pytest
import yaml

from peftir.pipeline.config import SCHEMA, joined_schema

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "peftir"
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
SEARCHED = ("src", "workflow", "benchmarks", "tests", "config", "docs", "profiles", "slurm", "envs")
# Spans that look like references but name nothing of this repository (other projects' files, outputs), and why.
NOT_CHECKED = {
    "splade/all.py": "naver/splade", "splade/tasks/amp.py": "naver/splade", "beir_eval.py": "naver/splade",
    "create_train.py": "luyug/Condenser", "create_train_co.py": "luyug/Condenser", "bm25_eval.py": "ModularCLIR",
    "trainer.py": "composable-sft", "sft_mlm.py": "composable-sft", "msmarco-doctriples.py": "Microsoft's script",
    "triples.train.small": "an MS MARCO file", "fold1-seed1.ir_metadata.yaml": "a job's output",
    "slurm/partitions.yaml": "the user's git-ignored copy", "params.code": "a field of a job's provenance record",
}
EXTERNAL_HEADS = {"lm", "out", "faiss", "torch", "log", "smk", "pandas", "cls", "Styler", "JobScheduler",
                  "CrossEncoder", "AdapterConfig"}                 # other libraries' objects, a snippet's variables
EXTERNAL_NAMES = {"cudaLaunchKernel", "create_position_ids_from_input_ids", "freeze_embeddings", "load_queries",
                  "rerank_and_eval", "_load_lowres_queries", "_num_params", "TrainerIter", "clip_grad_norm"}
HISTORICAL = {("docs/running.md", "training.py"), ("docs/running.md", "provenance.py")}   # named as they were

SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SUFFIXES = (".py", ".smk", ".yaml", ".yml", ".md", ".sh", ".toml", ".cfg", ".rst")
DATA_FILE = re.compile(r"[\w.{},<>-]+\.(json|jsonl|sqlite|txt|tsv|tex|csv|pt|ckpt|run|pdf|png|html|gz|pkl)")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[\w*]+)+")
LINE_REF = re.compile(r"(?P<path>[\w./-]+\.\w+):(?P<line>\d+)(?:-(?P<end>\d+))?")
ADJACENT = re.compile(r"`([\w./-]+\.py)`\s+`([A-Za-z_]\w*)`")
CODE_WORD = re.compile(r"_\w+|[a-z]\w*_\w*|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z][A-Z0-9_]{3,}")
SKIPPED_COLUMNS = ("the paper", "released code")


@functools.cache
def _modules() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    found = {}
    for file in PACKAGE.rglob("*.py"):
        parts = file.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return found


def _defined(node: ast.AST):
    """(name, its class's own members and `<base>` entries, or None) for what a statement defines."""
    if isinstance(node, ast.ClassDef):
        members = {name for child in node.body for name, _ in _defined(child)}
        members |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                    and isinstance(n.value, ast.Name) and n.value.id == "self"}
        yield node.name, members | {f"<base>{b.id}" for b in node.bases if isinstance(b, ast.Name)}
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield node.name, None
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            yield from ((n.id, None) for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        yield from (((a.asname or a.name).split(".")[0], None) for a in node.names)
    elif isinstance(node, (ast.If, ast.Try, ast.With)):
        for child in ast.iter_child_nodes(node):
            yield from _defined(child)


@functools.cache
def _names(module: str) -> tuple[dict[str, set[str] | None], set[str]]:
    """A module's top-level names (a class with its members) and its submodules."""
    top = {name: members for node in ast.parse(_modules()[module].read_text()).body
           for name, members in _defined(node)}
    return top, {m.rsplit(".", 1)[1] for m in _modules() if m.rpartition(".")[0] == module}


def _class_members(name: str, seen: frozenset[str] = frozenset()) -> set[str] | None:
    """Members of the package's classes of that name, inherited ones too; None when it has none."""
    found = None
    for module in _modules():
        members = _names(module)[0].get(name)
        if isinstance(members, set):
            found = (found or set()) | members
    for base in [m[6:] for m in found or () if m.startswith("<base>") and m[6:] not in seen | {name}]:
        found |= _class_members(base, seen | {name}) or set()
    return found


def _attributes(module: str, rest: list[str]) -> bool:
    while rest:
        top, subs = _names(module)
        if rest[0] in subs:
            module, rest = f"{module}.{rest[0]}", rest[1:]
            continue
        if rest[0] not in top:
            return False
        members = _class_members(rest[0]) if isinstance(top[rest[0]], set) else None
        return len(rest) == 1 or members is None or rest[1] in members      # past a value: not followed
    return True


def _pattern(text: str) -> str:
    return re.sub(r"<[^>]*>|\{[^}]*\}|…", "*", text)


def _is_code(parts: list[str]) -> bool:
    for k in range(len(parts), 0, -1):
        head = _pattern(".".join(parts[:k]))
        if any(_attributes(module, parts[k:]) for module in _modules()
               if fnmatch.fnmatchcase(module, head) or fnmatch.fnmatchcase(module, "*." + head)):
            return True
    members = _class_members(parts[0])
    return members is not None and len(parts) > 1 and parts[1] in members


def _schema_paths(node, defs, prefix, out, depth=0):
    if not isinstance(node, dict) or depth > 12:
        return
    if "$ref" in node:
        _schema_paths(defs.get(node["$ref"].rsplit("/", 1)[1]), defs, prefix, out, depth + 1)
    for sub in [*node.get("allOf", []), *node.get("anyOf", []), *node.get("oneOf", []), node.get("items")]:
        _schema_paths(sub, defs, prefix, out, depth + 1)
    for key, sub in node.get("properties", {}).items():
        out.add(prefix + (key,))
        _schema_paths(sub, defs, prefix + (key,), out, depth + 1)
    for sub in [node.get("additionalProperties"), *node.get("patternProperties", {}).values()]:
        if isinstance(sub, dict):                       # a map's keys: `*`
            out.add(prefix + ("*",))
            _schema_paths(sub, defs, prefix + ("*",), out, depth + 1)


def _yaml_paths(node, prefix, out):
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(prefix + (str(key),))
            _yaml_paths(value, prefix + (str(key),), out)
    elif isinstance(node, list):
        for value in node:
            _yaml_paths(value, prefix, out)


@functools.cache
def _config_keys() -> tuple[frozenset[tuple[str, ...]], frozenset[str]]:
    """Every key path of the configurations and the schema, and every key the configurations use."""
    out: set[tuple[str, ...]] = set()
    schema = joined_schema(REPO / SCHEMA, REPO)
    _schema_paths(schema, schema.get("$defs", {}), (), out)
    for file in [REPO / "config.yaml", *sorted((REPO / "config").rglob("*.yaml"))]:
        _yaml_paths(yaml.safe_load(file.read_text()), (), out)
    return frozenset(out), frozenset(key for path in out for key in path if key != "*")


def _is_config_key(parts: list[str]) -> bool:
    paths, used = _config_keys()
    parts = [_pattern(p) for p in parts]

    def matches(key: str, part: str, last: bool) -> bool:
        if key != "*":
            return fnmatch.fnmatchcase(key, part)
        return "*" in part or not last and part in used     # a schema map's key: one some config uses

    return any(all(matches(path[start + i], part, i == len(parts) - 1) for i, part in enumerate(parts))
               for path in paths for start in range(len(path) - len(parts) + 1))


@functools.cache
def _files_named(name: str) -> bool:
    return (REPO / name).is_file() or any(next((REPO / d).rglob(name), None) for d in SEARCHED)


@functools.cache
def _code_words() -> frozenset[str]:
    text = [f.read_text(errors="ignore") for d in ("src", "workflow", "benchmarks", "tests", "config", "slurm",
                                                   "profiles", "docs/hooks")
            for f in (REPO / d).rglob("*") if f.is_file() and f.suffix in ("", ".py", ".smk", ".yaml", ".yml")
            and f != Path(__file__).resolve()]          # this file's own examples of stale names do not count
    text += [(REPO / f).read_text() for f in ("Snakefile", "Makefile", "config.yaml")]
    return frozenset(re.findall(r"\w+", "\n".join(text)))


def _candidates(text: str, context: str | None) -> list[Path]:
    text = text.rstrip("/")
    if text.startswith("peftir/"):
        return [REPO / "src" / text]
    if (REPO / text.split("/", 1)[0]).exists():
        return [REPO / text]
    return [PACKAGE / text] + ([PACKAGE / context / text] if context else [])


def _exists(candidate: Path) -> bool:
    pattern = re.sub(r"<[^>]*>|…", "*", str(candidate))
    if pattern == str(candidate) and not re.search(r"[*?\[{]", pattern):
        return candidate.exists()
    braces = re.search(r"\{([^}]*)\}", pattern)
    options = [pattern] if not braces else [pattern[:braces.start()] + o + pattern[braces.end():]
                                            for o in re.split(r",|\.\.", braces[1])]
    return any(next(Path("/").glob(o.lstrip("/")), None) for o in options)


def reference_problem(span: str, context: str | None = None) -> str | None:
    """Why a span's reference does not resolve; None when it does or when the span is no reference."""
    text = re.sub(r"\(.*\)$", "", span)                          # a call: its name
    if not text or text in NOT_CHECKED or re.search(r"\s|@|\$|^[-.~]|^results/|:$", text):
        return None
    if line := LINE_REF.fullmatch(text):
        file = next((c for c in _candidates(line["path"], context) if c.is_file()), None)
        last = int(line["end"] or line["line"])
        if file is None:
            return "no such file"
        return None if last <= len(file.read_text().splitlines()) else f"{file.name} has fewer than {last} lines"
    if ":" in text or re.search(r"\.(\*|\{[^}]*\})$", text) or DATA_FILE.fullmatch(text):
        return None                                            # a pattern of names, a file the pipeline writes
    if "/" in text:
        if text.endswith(CODE_SUFFIXES) or text.endswith("/") and re.fullmatch(r"[\w./-]+", text):
            return None if any(_exists(c) for c in _candidates(text, context)) else "no such file"
        module = re.fullmatch(r"([\w/]+)\.([\w.]+)", text)      # `data/pretraining_text.sentences`
        if module and (PACKAGE / module[1].split("/")[0]).is_dir():
            return None if _is_code([*module[1].split("/"), *module[2].split(".")]) else "no such module or name"
        return None                                             # an ir_datasets id, a model's name
    if text.endswith(CODE_SUFFIXES) and re.fullmatch(r"[\w.-]+", text):
        return None if _files_named(text) else "no file of that name"
    if DOTTED.fullmatch(_pattern(text).replace("*", "x")) and not re.search(r"\.\d", text):
        parts = text.split(".")
        if (all(re.fullmatch(r"\w+|<\w+>", p) for p in parts) and _is_code(parts)) or _is_config_key(parts) \
                or parts[0] in EXTERNAL_HEADS:
            return None
        return "no such module, name or config key"
    if CODE_WORD.fullmatch(text) and text not in EXTERNAL_NAMES and text not in _code_words():
        return "no such name in the code or the configs"
    return None


def _cells(line: str) -> list[tuple[int, int]]:
    bars = [m.start() for m in re.finditer(r"(?<!\\)\|", line)]
    return list(zip(bars, bars[1:]))


def manual_spans(page: Path):
    """(line number, span, the subpackage an earlier span of its paragraph or row names, line, match) of every
    inline code span, those in a fidelity table's columns about the paper or the released code left out."""
    lines = FENCE.sub(lambda m: "\n" * m[0].count("\n"), page.read_text()).split("\n")
    skipped: set[int] = set()
    context = None
    for number, line in enumerate(lines, 1):
        is_row = line.lstrip().startswith("|")
        if not line.strip() or is_row:
            context = None
        if not is_row:
            skipped = set()
        elif number < len(lines) and re.fullmatch(r"\s*\|(\s*:?-+:?\s*\|)+\s*", lines[number]):   # a header
            skipped = {i for i, (a, b) in enumerate(_cells(line)) if any(w in line[a:b] for w in SKIPPED_COLUMNS)}
        cells = _cells(line) if is_row else []
        for match in SPAN.finditer(line):
            if next((i for i, (a, b) in enumerate(cells) if a < match.start() < b), None) in skipped:
                continue
            yield number, match[1].strip(), context, line, match
            if (named := re.match(r"(?:src/)?peftir/(\w+)/", match[1])) and (PACKAGE / named[1]).is_dir():
                context = named[1]


def manual_problems() -> list[str]:
    found = []
    for page in PAGES:
        where = page.relative_to(REPO).as_posix()
        for number, span, context, line, match in manual_spans(page):
            if (where, span) in HISTORICAL:
                continue
            if why := reference_problem(span, context):
                found.append(f"{where}:{number}: `{span}`: {why}")
            elif (after := ADJACENT.match(line, match.start())) and span.endswith(".py"):
                file = next((c for c in _candidates(span, context) if c.is_file()), None)
                if file and PACKAGE in file.parents:
                    module = ".".join(file.relative_to(PACKAGE.parent).with_suffix("").parts)
                    if after[2] not in _names(module.removesuffix(".__init__"))[0]:
                        found.append(f"{where}:{number}: `{span}` `{after[2]}`: the file defines no {after[2]}")
    return found


def test_every_reference_in_the_manual_resolves() -> None:
    problems = manual_problems()
    assert not problems, "the manual names what the repository no longer has:\n" + "\n".join(problems)


@pytest.mark.parametrize("span", ["sparse/encoder.py", "layout.is_beir", "modular_reranker.query_tokens",
                                  "reports.clir.translated_cell", "execution/gradients.no_such", "no_such_file.py",
                                  "splade/encoder.py:100000", "Condenser.no_such", "peftir.splade.no_such",
                                  "_no_such_helper", "NO_SUCH_CONSTANT"])
def test_a_stale_reference_is_found(span: str) -> None:
    assert reference_problem(span) is not None


@pytest.mark.parametrize("span", ["splade/encoder.py", "splade/encoder.py:37", "peftir.splade.encoder.splade_pooling",
                                  "encoder.masked_lm", "gradients.cached_gradient", "execution/gradients.py",
                                  "data/pretraining_text.sentences", "Condenser.load_head", "peftir.<system>.plan",
                                  "workflow/scripts/<rule>.py", "config/paper*.yaml",
                                  "sparse_retrieval.train.q_max_len",
                                  "methods.*_distil.regularisation", "train.validation_*", "tests/test_splade.py",
                                  "splade_pooling", "DENSE_OVERRIDES"])
def test_a_current_reference_resolves(span: str) -> None:
    assert reference_problem(span) is None


if __name__ == "__main__":
    print("\n".join(manual_problems()))

"""A result as a Workflow Run RO-Crate a reviewer can verify: ``peftir crate results/tables/table5.tex``.

The crate holds one table (or figure) and everything behind it, described in the Provenance Run Crate
profile (0.5, on RO-Crate 1.1, as the Workflow Run Crate profiles are defined; the ``rocrate`` library
writes it):

- the workflow as the crate's ``ComputationalWorkflow`` (the Snakefile, with every tracked file of the
  checkout at the commit the table was built at, from git: rules, scripts, the ``peftir`` package,
  ``config.yaml`` and the configurations), each rule a ``HowToStep`` whose tool is its script;
- one ``CreateAction`` per job of the result's chain (the table's runs, their weights, BM25, the
  export...), its rule's script as ``instrument``, its inputs and params (``PropertyValue``) as
  ``object``, its outputs as ``result``, with start and end times; ``ControlAction`` s tie jobs to
  steps and an ``OrganizeAction`` (Snakemake) to the run of the workflow, whose result is the table;
- every file of the chain, with its sha256 and size, its provenance record, and the config overlays
  the run used; software versions and the commit;
- the authors named in the config's ``publication`` (or ``--author``), as the crate's ``author`` and the
  ``agent`` of its actions, and the licence of its content.

Left out, and described by path, sha256, size and why: model weights (``--with-weights`` puts them
in), the documents of licensed collections (their ir_datasets id and licence are said; never copied),
and with ``--no-collections`` the exported documents and indexes of public ones (too large to ship,
made again byte for byte by the ``download`` and ``index`` rules). ``peftir audit --crate`` unpacks a
crate and audits it as in place, skipping only what was left out by design.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath

from ..contract.paths import RESULTS
from ..pipeline.contract import artefact
from ..provenance import records
from ..provenance.code_version import shipped_path
from ..systems import CrateKinds, registered

CRATE_VERSION = "1.1"           # the Workflow Run Crate profiles 0.5 are defined on RO-Crate 1.1
PROFILES = {"Process Run Crate": "https://w3id.org/ro/wfrun/process/0.5",
            "Workflow Run Crate": "https://w3id.org/ro/wfrun/workflow/0.5",
            "Provenance Run Crate": "https://w3id.org/ro/wfrun/provenance/0.5",
            "Workflow RO-Crate": "https://w3id.org/workflowhub/workflow-ro-crate/1.0"}
SNAKEMAKE = "https://snakemake.github.io"
SYSTEM_SCRIPTS = "systems"     # in a crate: the rule scripts installed system packages ship, as <package>/<path>
LEFT_OUT = "left-out"           # additionalType of a file described but not in the crate
# The core's artefact kinds and rules, then (KINDS) each registered system's (``System.crate``) after them, in the
# systems' order.
CORE = CrateKinds(collection=("docs", "docs_lookup", "index"), licensed=("export",),
                  steps=("download", "export_answers", "folds", "triples", "index", "bm25"))
KINDS = CrateKinds(*(tuple(item for one in (CORE, *(system.crate for system in registered()))
                           for item in getattr(one, kind.name)) for kind in fields(CrateKinds)))
MEDIA = {".json": "application/json", ".jsonl": "application/jsonl", ".tex": "application/x-tex",
         ".csv": "text/csv", ".pdf": "application/pdf", ".png": "image/png", ".yaml": "application/yaml",
         ".tsv": "text/tab-separated-values", ".txt": "text/plain", ".run": "text/plain", ".md": "text/markdown",
         ".sqlite": "application/vnd.sqlite3", ".py": "text/x-python", ".smk": "text/x-python",
         ".toml": "application/toml", ".rst": "text/x-rst", ".html": "text/html"}
LICENCES = {"https://spdx.org/licenses/CC-BY-4.0": "Creative Commons Attribution 4.0 International"}
AUTHOR = re.compile(r"^(?P<name>[^<>]*[^<> ])(?: <(?P<url>https?://[^<> ]+)>)?$")   # as the config schema's


class CrateError(Exception):
    """A crate that cannot be made or read as asked; the message says why."""


@dataclass
class Chain:
    """The jobs behind a result: each job's record once (a record is stored beside each of its outputs)."""

    jobs: dict[tuple[str, ...], dict] = field(default_factory=dict)     # by the job's outputs
    files: dict[str, dict] = field(default_factory=dict)                # every file → its job's record

    def add(self, path: str) -> bool:
        if path in self.files:
            return False
        record = records.read_record(path)
        outputs = tuple(sorted(p for files in record["outputs"].values() for p in files))
        record = self.jobs.setdefault(outputs, record)
        for output in outputs:
            self.files[output] = record
        return True


def chain_of(report: str) -> Chain:
    """Every job and file behind ``report`` (a table's .tex or a figure's .pdf), walking the records' inputs."""
    chain, pending = Chain(), [report]
    while pending:
        path = pending.pop()
        if not chain.add(path):
            continue
        for files in chain.files[path]["inputs"].values():
            pending.extend(p for p in files if Path(p).parts[:1] == (RESULTS,))
    return chain


def _licensed(record: dict) -> tuple[str, str] | None:
    """The licensed collection a job read (its name and licence), from its params (``KINDS.licensed``: a dataset's
    ``export`` from ir_datasets, a system's own collection from local files or ir_datasets)."""
    for param in KINDS.licensed:
        collection = record["params"].get(param) or {}
        if collection.get("licence"):
            return collection.get("irds") or collection.get("path") or collection["source"], collection["licence"]
    return None


def left_out(path: str, record: dict, with_weights: bool, collections: bool) -> str | None:
    """Why a file of the chain stays out of the crate (None: it goes in)."""
    kind = (artefact(path) or ("",))[0]
    if kind in KINDS.weights and not with_weights:
        return "model weights: referenced by hash; `peftir crate --with-weights` includes them"
    if kind in KINDS.vectors and not with_weights:
        return ("a corpus's vectors (a faiss or impact index), made from the retriever's weights: "
                "referenced by hash; `peftir crate --with-weights` includes them")
    if kind in KINDS.collection:
        licensed = _licensed(record)
        if licensed:
            return (f"documents of a licensed collection ({licensed[0]}): never copied; obtain {licensed[1]} "
                    f"and run the rule {record['rule']} to make the file again")
        if not collections:
            return f"a collection's text or index: left out (--no-collections); the rule {record['rule']} " \
                   "makes it again, byte for byte"
    return None


def _licence_of(chain: Chain) -> list[dict]:
    """The licensed collections the chain draws on: their names and licences (from the jobs' params)."""
    found = dict(filter(None, map(_licensed, chain.jobs.values())))
    return [{"irds": name, "licence": licence} for name, licence in sorted(found.items())]


def git_output(checkout: Path, *args: str) -> bytes:
    """What ``git args`` prints in ``checkout``; a failure as a ``CrateError`` naming the command."""
    done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True)
    if done.returncode:
        raise CrateError(f"git {' '.join(args)} in {checkout}: {done.stderr.decode().strip()}")
    return done.stdout


def workflow_files(checkout: Path, commit: str, dirty: bool, into: Path, named: frozenset[str] = frozenset()
                   ) -> list[str]:
    """The workflow's files as they ran, written under ``into``; their paths. Every file tracked at ``commit``;
    for a result built from a checkout with uncommitted changes, the checkout's tracked files (staged new ones
    included) as they are now, which is the nearest to what ran (the records' code digests say exactly). Files
    git does not track are refused, not packed: a stray file (notes, a key, a scratch copy of a module) is not
    part of the workflow, and one the workflow needs must be added (``git add``) so that it is part of it. Files
    the run ``named`` (its config overlays, data files its jobs read, e.g. a Wikipedia text; paths relative to the
    checkout) are not refused: the crate carries or describes them as the run's."""
    try:
        git_output(checkout, "cat-file", "-e", f"{commit}^{{commit}}")
    except CrateError:
        raise CrateError(f"the result was built at commit {commit}, which the checkout {checkout} does not have: "
                         f"fetch it (git fetch) and run again") from None
    if dirty:
        untracked = [p for p in git_output(checkout, "ls-files", "-z", "--others", "--exclude-standard").decode()
                     .split("\0") if p and p not in named]
        if untracked:
            shown = ", ".join(untracked[:5]) + (f" and {len(untracked) - 5} more" if len(untracked) > 5 else "")
            raise CrateError(f"{len(untracked)} untracked file(s) in the checkout {checkout}: {shown}. A crate of "
                             f"uncommitted work packs tracked files only: add the ones the workflow needs (git add) "
                             f"and remove or ignore the others, or commit, then run again")
        listed = git_output(checkout, "ls-files", "-z", "--cached")
        paths = [p for p in listed.decode().split("\0") if p and (checkout / p).is_file()]
        read = lambda path: (checkout / path).read_bytes()          # noqa: E731
    else:
        listed = git_output(checkout, "ls-tree", "-r", "--name-only", "-z", commit)
        paths = [p for p in listed.decode().split("\0") if p]
        read = lambda path: git_output(checkout, "show", f"{commit}:{path}")     # noqa: E731
    for path in paths:
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read(path))
    return paths


def _media(path: str) -> str:
    """The file's media type, as RO-Crate recommends for data entities (octet-stream where none fits)."""
    return MEDIA.get(Path(path).suffix, "text/plain" if Path(path).name in ("Snakefile", "Makefile")
                     else "application/octet-stream")


def _shipped_script(name: str, path: Path, package: str) -> dict:
    """A crate's description of a rule's script that an installed system's package ships, not the checkout."""
    return {"@type": ["File", "SoftwareSourceCode"], "name": name, "sha256": records.sha256(path),
            "encodingFormat": _media(str(path)),
            "description": f"a rule's script shipped by the installed package {package}, not by the workflow's "
                           f"checkout; the rest of that package is not packed: its modules the jobs ran are named "
                           f"by the records' code versions and its reported numbers by the jobs' reported params "
                           f"(path and sha256), its rules file and config schema fragment by neither"}


def _one(values: list) -> object:
    """RO-Crate 1.1 prefers a single value to a one-element list."""
    return values[0] if len(values) == 1 else values


class CrateWriter:
    """Builds the RO-Crate of one chain with ``rocrate``; staging files in a temporary directory."""

    def __init__(self, report: str, chain: Chain, checkout: Path, staging: Path, with_weights: bool,
                 collections: bool, licence: str, authors: list[str]) -> None:
        from rocrate.model.contextentity import ContextEntity
        from rocrate.rocrate import ROCrate

        self.report, self.chain, self.checkout, self.staging = report, chain, checkout, staging
        self.Entity = ContextEntity
        self.crate = ROCrate(version=CRATE_VERSION)
        self.crate.metadata.extra_terms = {"sha256": "http://schema.org/sha256"}   # not in RO-Crate 1.1's context
        self.entities: dict[str, object] = {}
        self.with_weights, self.collections, self.licence = with_weights, collections, licence
        self.table_record = chain.files[report]
        self.authors = [self.person(author) for author in authors]

    def person(self, author: str) -> object:
        """``Name`` or ``Name <URL>`` (an ORCID, say) as a Person, identified by its URL where it has one."""
        found = AUTHOR.match(author)
        if not found:
            raise CrateError(f"author {author!r}: give a name, or a name and its URL: "
                             "'Ada Lovelace <https://orcid.org/0000-0000-0000-0000>'")
        identifier = found["url"] or "#author/" + re.sub(r"[^A-Za-z0-9]+", "-", found["name"]).strip("-").lower()
        return self.crate.add(self.Entity(self.crate, identifier, properties={"@type": "Person",
                                                                               "name": found["name"]}))

    def by_authors(self, properties: dict) -> dict:
        """An action's properties with its agents, the authors, where there are any."""
        return {**properties, "agent": _one(self.authors)} if self.authors else properties

    # --- files -------------------------------------------------------------------------------------
    def data_file(self, path: str, record: dict | None) -> object:
        """The crate's entity of a result file: in the crate (sha256, size), or described and left out."""
        if path in self.entities:
            return self.entities[path]
        digest = next((h for files in record["outputs"].values() for p, h in files.items() if p == path), None) \
            if record else None
        source = Path(path)
        why = left_out(path, record, self.with_weights, self.collections) if record else None
        properties = {"name": path, "sha256": digest or records.sha256(source)}
        if source.is_file():
            properties["contentSize"] = str(source.stat().st_size)
        if not source.is_dir():
            properties["encodingFormat"] = _media(path)
        if why:
            entity = self.crate.add(self.Entity(self.crate, f"#left-out/{path}", properties={
                "@type": "File" if not source.is_dir() else "Dataset", **properties, "additionalType": LEFT_OUT,
                "description": why}))
        elif source.is_dir():     # a Dataset written whole (its files not listed one by one)
            entity = self.crate.add_dataset(str(source), dest_path=path, properties=properties)
        else:
            entity = self.crate.add_file(str(source), dest_path=path, properties=properties)
        self.entities[path] = entity
        return entity

    def record_file(self, path: str) -> None:
        record = records.record_path(path)
        about = self.data_file(path, self.chain.files.get(path))
        self.crate.add_file(str(record), dest_path=record.as_posix(), properties={
            "name": f"provenance record of {path}", "sha256": records.sha256(record),
            "encodingFormat": "application/json", "about": {"@id": about.id}})

    # --- workflow ----------------------------------------------------------------------------------
    def workflow(self) -> object:
        """The Snakefile as the crate's main ComputationalWorkflow (and HowTo: it has steps), every file tracked
        at the table's commit beside it (the rules' scripts, its tools, typed as software), and the software
        versions the jobs ran with."""
        git = self.table_record["git"]
        source = self.staging / "workflow"
        overlays = frozenset(entry["path"] for entry in self.table_record["configfiles"] if entry["base"] != "absolute")
        named = overlays | {
            path for record in self.chain.jobs.values() for files in record["inputs"].values() for path in files
            if not path.startswith(f"{RESULTS}/")}        # the run's overlays, and data files its jobs read
        tracked = workflow_files(self.checkout, git["commit"], bool(git["dirty"]), source, named)
        tools = {record["params"]["code"]["script"] for record in self.chain.jobs.values()}
        workflow = self.crate.add_workflow(
            str(source / "Snakefile"), "Snakefile", main=True, lang="snakemake",
            lang_version=self.table_record["versions"].get("snakemake"),
            properties={"@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
                        "name": "PEFT-IR Repro", "version": git["commit"],
                        "description": f"The workflow at commit {git['commit']}"
                                       + (" with the uncommitted changes of the checkout it ran from (its files "
                                          "as they were when the crate was made)" if git["dirty"] else "")})
        for path in tracked:
            if path == "Snakefile":
                continue
            properties = {"name": path, "sha256": records.sha256(source / path), "encodingFormat": _media(path)}
            if path in tools:
                properties.update({"@type": ["File", "SoftwareSourceCode"], "version": git["commit"],
                                   "description": "a rule's script: it calls one function of the peftir package"})
            if path == "README.md":
                properties["about"] = {"@id": "./"}
            self.entities[path] = self.crate.add_file(str(source / path), dest_path=path, properties=properties)
        for name in sorted(tools - set(tracked)):       # a script an installed system's package ships
            package, packaged, _ = name.partition(":")
            if not packaged:
                raise CrateError(f"{name}: a rule's script its records name, which the checkout does not track at "
                                 f"commit {git['commit']} and no installed system package ships")
            path = shipped_path(name, self.checkout)
            self.entities[name] = self.crate.add_file(str(path), dest_path=f"{SYSTEM_SCRIPTS}/{name.replace(':', '/')}",
                                                      properties=_shipped_script(name, path, package))
        workflow["hasPart"] = _one([self.entities[path] for path in sorted(tools)])   # the tools it orchestrates
        workflow["softwareRequirements"] = [self.crate.add(self.Entity(
            self.crate, f"https://pypi.org/project/{name}/{version}/",
            properties={"@type": "SoftwareApplication", "name": name, "version": version,
                        "url": f"https://pypi.org/project/{name}/{version}/"}))
            for name, version in sorted(self.table_record["versions"].items()) if version and name != "peftir"]
        return workflow

    def steps(self, workflow: object) -> dict[str, tuple[object, object]]:
        """Per rule of the chain, its HowToStep and its tool (the rule's script), in the DAG's order."""
        order = KINDS.steps                # a rule no system orders comes last
        rules = sorted({record["rule"] for record in self.chain.jobs.values()},
                       key=lambda rule: (order.index(rule) if rule in order else len(order), rule))
        made = {}
        for position, rule in enumerate(rules):
            script = next(record["params"]["code"]["script"] for record in self.chain.jobs.values()
                          if record["rule"] == rule)
            tool = self.entities[script]
            step = self.crate.add(self.Entity(self.crate, f"#step/{rule}", properties={
                "@type": "HowToStep", "name": f"rule {rule}", "position": str(position),
                "workExample": {"@id": tool.id}}))
            made[rule] = (step, tool)
        workflow["step"] = _one([step for step, _ in made.values()])
        return made

    def config_file(self, entry: dict) -> object:
        """A config file of the run: the commit's own (tracked), else the file the run read (an overlay in
        the checkout or beside ``results/``), at its recorded path; one kept elsewhere is only described."""
        path = entry["path"]
        if entry["base"] == "absolute":
            return self.crate.add(self.Entity(self.crate, f"#left-out/{path}", properties={
                "@type": "File", "name": path, "sha256": entry["sha256"], "additionalType": LEFT_OUT,
                "description": "a config overlay kept outside the checkout and the working directory: keep "
                               "overlays beside results/ so that a crate carries them"}))
        if path not in self.entities:
            source = records.config_path(entry, self.checkout)
            self.entities[path] = self.crate.add_file(str(source), dest_path=path, properties={
                "name": path, "sha256": records.sha256(source), "encodingFormat": "application/yaml"})
        return self.entities[path]

    def parameter(self, name: str, value: object) -> object:
        text = json.dumps(value, sort_keys=True)
        identifier = f"#param/{name}/{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        if identifier not in self.entities:
            self.entities[identifier] = self.crate.add(self.Entity(self.crate, identifier, properties={
                "@type": "PropertyValue", "name": name, "value": text}))
        return self.entities[identifier]

    def jobs(self, steps: dict) -> list[object]:
        controls = []
        for index, (outputs, record) in enumerate(sorted(self.chain.jobs.items())):
            step, tool = steps[record["rule"]]
            wildcards = ", ".join(f"{k}={v}" for k, v in sorted(record["wildcards"].items()))
            inputs = [self.data_file(p, self.chain.files.get(p)) for files in record["inputs"].values() for p in files]
            params = [self.parameter(name, value) for name, value in sorted(record["params"].items())]
            job = self.crate.add_action(tool, f"#job/{index}", object=_one(inputs + params),
                                        result=_one([self.data_file(p, record) for p in outputs]),
                                        properties=self.by_authors({
                "name": f"{record['rule']} ({wildcards})" if wildcards else record["rule"],
                "description": f"job of rule {record['rule']} on {record['host']}"
                               + (f", SLURM job {record['slurm_job_id']}" if record["slurm_job_id"] else ""),
                "startTime": record["started"], "endTime": record["ended"]}))
            controls.append(self.crate.add(self.Entity(self.crate, f"#control/{index}", properties={
                "@type": "ControlAction", "name": f"orchestrate {job['name']}", "instrument": {"@id": step.id},
                "object": {"@id": job.id}})))
            for output in outputs:
                self.record_file(output)
        return controls

    def build(self, output: Path) -> None:
        crate, table = self.crate, self.table_record
        root = crate.root_dataset
        profiles = [crate.add(self.Entity(crate, uri, properties={"@type": "CreativeWork", "name": name,
                                                                  "version": uri.rsplit("/", 1)[1]}))
                    for name, uri in PROFILES.items()]
        workflow = self.workflow()
        steps = self.steps(workflow)
        controls = self.jobs(steps)
        configs = [self.config_file(entry) for entry in table["configfiles"]]
        results = [self.entities[p] for p in sorted(self.chain.files) if self.chain.files[p] is table]
        started = min(r["started"] for r in self.chain.jobs.values())
        ended = max(r["ended"] for r in self.chain.jobs.values())
        run = crate.add_action(workflow, "#run", object=_one(configs), result=_one(results),
                               properties=self.by_authors({
            "name": f"the run of the workflow that made {self.report}", "startTime": started, "endTime": ended,
            "description": "the jobs of this result's chain: each is a CreateAction of its rule's script"}))
        engine = crate.add(self.Entity(crate, SNAKEMAKE, properties={
            "@type": "SoftwareApplication", "name": "Snakemake", "url": SNAKEMAKE,
            "version": table["versions"].get("snakemake")}))
        crate.add(self.Entity(crate, "#orchestration", properties=self.by_authors({
            "@type": "OrganizeAction", "name": "Snakemake's run of the jobs", "instrument": {"@id": engine.id},
            "object": controls, "result": {"@id": run.id}})))
        root["name"] = f"PEFT-IR Repro: {self.report}"
        root["description"] = (f"{self.report} and every job, file, config and code version behind it (commit "
                               f"{table['git']['commit']}); audit with `peftir audit --crate`")
        root["license"] = crate.add(self.Entity(crate, self.licence, properties={
            "@type": "CreativeWork", "name": LICENCES.get(self.licence, self.licence), "url": self.licence}))
        root["datePublished"] = records.now()
        if self.authors:
            root["author"] = _one(self.authors)
        root["conformsTo"] = profiles
        root["mentions"] = [run] + [crate.get(f"#job/{i}") for i in range(len(self.chain.jobs))]
        root["about"] = self.entities[self.report]
        licensed = _licence_of(self.chain)
        if licensed:
            root["usageInfo"] = "; ".join(f"{item['irds']}: {item['licence']}" for item in licensed)
        written = self.staging / "crate"
        crate.write(written)
        zip_tree(written, output)


def zip_tree(tree: Path, output: Path) -> None:
    """Zip a written crate with an entry for every directory too (a Dataset's payload is its directory), in
    name order and with fixed dates, so the same crate gives the same bytes."""
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(tree.rglob("*")):
            name = path.relative_to(tree).as_posix() + ("/" if path.is_dir() else "")
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = (0o40755 if path.is_dir() else 0o100644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            if path.is_dir():
                archive.writestr(entry, b"")
                continue
            with open(path, "rb") as source, archive.open(entry, "w", force_zip64=True) as target:
                shutil.copyfileobj(source, target, 1 << 20)


def build_crate(report: str, output: str | os.PathLike, checkout: Path, with_weights: bool = False,
                collections: bool = True, licence: str = "https://spdx.org/licenses/CC-BY-4.0",
                authors: list[str] = ()) -> dict:
    """Write the Workflow Run RO-Crate of ``report`` (from the working directory that holds ``results/``);
    ``authors``: ``Name`` or ``Name <URL>`` each."""
    chain = chain_of(report)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="peftir-crate-") as staging:
        writer = CrateWriter(report, chain, checkout, Path(staging), with_weights, collections, licence,
                             list(authors))
        partial = output.with_name(f".{output.name}.part")
        try:
            writer.build(partial)
            os.replace(partial, output)
        finally:                      # a failed build leaves nothing beside the crate
            partial.unlink(missing_ok=True)
    left = sum(1 for entity in writer.crate.get_entities() if entity.get("additionalType") == LEFT_OUT)
    return {"jobs": len(chain.jobs), "files": len(chain.files), "left_out": left, "bytes": output.stat().st_size}


def make_crate(report: str, output: str, publication: dict) -> None:
    """The ``crate`` rule: the result's crate without weights, from the workflow's own checkout, with the
    config's ``publication`` (authors, licence)."""
    summary = build_crate(report, output, Path(records.workflow_checkout()), licence=publication["licence"],
                          authors=publication["authors"])
    print(json.dumps(summary), file=sys.stderr)


# --- reading a crate back (``peftir audit --crate``) ------------------------------------------------

@dataclass
class Unpacked:
    """A crate unpacked: where, what it is about, the commit it needs, what it left out and why."""

    root: Path
    report: str
    commit: str
    left_out: dict[str, str]


@dataclass(frozen=True)
class Limits:
    """What a crate may unpack to: entries and bytes (as its zip declares them; Python's zipfile never writes more
    than an entry declares). The defaults hold a paper's crate with its weights (Table 5 of the rerankers' paper at
    paper scale: 330 runs, about 26 GB of fully fine-tuned weights); ``peftir audit --max-entries/--max-bytes`` raise
    them."""

    entries: int = 1_000_000
    bytes: int = 64 * 2**30


METADATA = "ro-crate-metadata.json"
SHA256 = re.compile(r"[0-9a-f]{64}")
METADATA_BYTES = 256 * 2**20       # the metadata of a 1,000-job crate is a few MB


def inside_crate(name: str) -> PurePosixPath | None:
    """``name`` (a zip entry's, or an entity's id) as a relative path inside the crate, None when it is not one
    (absolute, a drive, a backslash, a ``..``, a URL)."""
    path = PurePosixPath(name)
    if not path.parts or "\\" in name or path.is_absolute() or ".." in path.parts or ":" in path.parts[0]:
        return None
    return path


def _metadata(archive: zipfile.ZipFile) -> list[dict]:
    """The crate's ``@graph``, read from the archive before anything is extracted."""
    try:
        info = archive.getinfo(METADATA)
    except KeyError:
        raise CrateError(f"no {METADATA}: not an RO-Crate") from None
    if info.file_size > METADATA_BYTES:
        raise CrateError(f"{METADATA} declares {info.file_size} bytes, more than a crate's metadata holds "
                         f"({METADATA_BYTES})")
    try:
        graph = json.loads(archive.read(info)).get("@graph")
    except (ValueError, AttributeError, zipfile.BadZipFile) as problem:
        raise CrateError(f"{METADATA} is not JSON-LD with a @graph: {problem}") from None
    if not isinstance(graph, list) or not all(isinstance(entity, dict) and isinstance(entity.get("@id"), str)
                                              for entity in graph):
        raise CrateError(f"{METADATA}: its @graph is not a list of entities with an @id")
    return graph


def _payload(graph: list[dict]) -> tuple[set[str], set[str]]:
    """The files (by path) and the folders (by path, with a slash) the metadata says the crate holds; an entity
    that is hashed but whose id is not a path inside the crate is refused."""
    files, folders = {METADATA}, set()
    for entity in graph:
        ident, digest = entity["@id"], entity.get("sha256")
        if ident.startswith("#") or ident == "./" or (digest is None and "://" in ident):
            continue
        path = inside_crate(ident)
        if path is None:
            raise CrateError(f"the entity {ident!r} is not a path inside the crate (absolute, a URL or with '..'): "
                             f"refused, as the audit would read a file of this machine")
        if path.parts[0] == RESULTS and not (isinstance(digest, str) and SHA256.fullmatch(digest)):
            raise CrateError(f"the entity {ident!r} has no sha256 (64 hex digits): a result the crate cannot vouch "
                             f"for; refused")
        (folders if ident.endswith("/") else files).add(ident)
    return files, folders


def _extract(archive: zipfile.ZipFile, into: Path, graph: list[dict], limits: Limits) -> None:
    """Extract only regular files and folders the metadata names, each path inside ``into``, within ``limits``."""
    entries = archive.infolist()
    declared = sum(entry.file_size for entry in entries)
    if len(entries) > limits.entries:
        raise CrateError(f"{len(entries)} entries, more than the {limits.entries} allowed (--max-entries)")
    if declared > limits.bytes:
        raise CrateError(f"unpacks to {declared} bytes, more than the {limits.bytes} allowed (--max-bytes)")
    into.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(into).free
    if declared > free:
        raise CrateError(f"unpacks to {declared} bytes; {into} has {free} free (--scratch DIR for another place)")
    files, folders = _payload(graph)
    root = into.resolve()
    for entry in entries:
        path = inside_crate(entry.filename)
        kind = stat.S_IFMT(entry.external_attr >> 16)          # 0 where the zip says no type (a regular file)
        if path is None:
            raise CrateError(f"the entry {entry.filename!r} is not a path inside the crate: refused")
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise CrateError(f"the entry {entry.filename!r} is not a regular file or folder (a link?): refused")
        target = (root / path).resolve()
        if root not in target.parents and target != root:
            raise CrateError(f"the entry {entry.filename!r} unpacks outside the crate's folder: refused")
        if entry.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        if entry.filename not in files and not any(entry.filename.startswith(folder) for folder in folders):
            raise CrateError(f"the crate holds {entry.filename}, which its metadata does not name: refused")
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(entry) as source, open(target, "wb") as written:
            shutil.copyfileobj(source, written, 1 << 20)


def _left_out(into: Path, entity: dict) -> tuple[str, str] | None:
    """A result the crate declares left out, with why, once the audit's own rules agree that a crate leaves such a
    file out (weights, a corpus's vectors, a collection); a declaration alone would spare any file a re-hash. None
    for a file outside ``results/`` (a config overlay kept elsewhere: described, never read by the audit)."""
    name = str(entity.get("name", ""))
    if inside_crate(name) is None or PurePosixPath(name).parts[:1] != (RESULTS,):
        return None
    record_file = into / records.record_path(name)
    try:
        record = json.loads(record_file.read_text())
        why = left_out(name, record, with_weights=False, collections=False)
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        raise CrateError(f"declares {name} left out, but holds no readable provenance record of it") from None
    if why is None:
        raise CrateError(f"declares {name} left out, but a crate never leaves out such a file (only weights, a "
                         f"corpus's vectors and collections): refused")
    return name, why


def unpack(crate_path: str | os.PathLike, into: Path, limits: Limits = Limits()) -> Unpacked:
    """Extract a crate safely (``_extract``) and check every file it holds against the sha256 its metadata gives,
    naming the first that differs. The metadata is the crate's own: this finds a crate that is inconsistent, not
    one rewritten whole. Every malformed crate gives one ``CrateError`` line."""
    from rocrate.rocrate import ROCrate

    try:
        with zipfile.ZipFile(crate_path) as archive:
            graph = _metadata(archive)
            _extract(archive, into, graph, limits)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error,
            RuntimeError) as problem:                  # RuntimeError: an encrypted entry
        raise CrateError(f"not a readable zip archive: {problem}") from None
    except RecursionError:
        raise CrateError(f"{METADATA} nests too deeply to be a crate's metadata") from None
    except OSError as problem:     # a folder where a file goes, a file where a folder goes, a crate that is a folder
        raise CrateError(f"cannot be unpacked: {problem.strerror or problem}"
                         f"{f' ({Path(problem.filename).name})' if problem.filename else ''}") from None
    try:
        crate = ROCrate(into)
        workflow, about = crate.mainEntity, crate.root_dataset.get("about")
        commit, report = workflow["version"], about.id
    except Exception as problem:   # rocrate's own errors have no common type
        raise CrateError(f"its metadata does not describe a workflow run (mainEntity with a version, about): "
                         f"{type(problem).__name__}: {problem}") from None
    if not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit)):
        raise CrateError(f"its workflow's version {commit!r} is not a git commit (40 hex digits)")
    if inside_crate(report) is None or artefact(report) is None:
        raise CrateError(f"it is about {report!r}, which is not a table or figure the workflow writes")
    left = dict(filter(None, (_left_out(into, entity) for entity in crate.get_entities()
                              if entity.get("additionalType") == LEFT_OUT)))
    for entity in crate.get_entities():
        digest = entity.get("sha256")
        if digest and entity.get("additionalType") != LEFT_OUT and not entity.id.startswith("#") and entity.id != "./":
            path = into / entity.id
            if not path.exists():
                raise CrateError(f"{entity.id}: listed in the crate's metadata, missing from the crate")
            if records.sha256(path, _hashing(into, entity.id)) != digest:
                raise CrateError(f"{entity.id}: its bytes are not those the crate's metadata describes (sha256 "
                                 f"differs): the crate is inconsistent")
    return Unpacked(root=into, report=report, commit=commit, left_out=left)


def _hashing(into: Path, ident: str) -> int:
    """How the crate's digest of ``ident`` was computed: a result's is its record's (a folder written before
    folders were hashed with lengths is read the old way); any other file's is today's."""
    try:
        return records.hashing_of(json.loads((into / records.record_path(ident)).read_text()))
    except (OSError, ValueError, AttributeError):
        return records.HASHING


def check_commit(unpacked: Unpacked, checkout: Path) -> None:
    """The crate can be audited only with the code it was made with: the checkout must be at its commit."""
    head = git_output(checkout, "rev-parse", "HEAD").decode().strip()
    if head != unpacked.commit:
        raise CrateError(f"the crate was made at commit {unpacked.commit}; this checkout ({checkout}) is at {head}: "
                         f"run `git checkout {unpacked.commit}` (and `make install`) first")

"""Provenance records: what produced each file of the workflow, so any number can be traced and re-checked.

Every job, once its outputs are complete, writes one record per output under
``results/provenance/`` (the output's path relative to ``results/``, plus
``.json``): rule, wildcards, params, the sha256 of every input and output and of
each input's own record (so a record edited on its own no longer matches the
records made from it), the git commit of the workflow and whether it had
uncommitted changes, the version of every installed distribution, seeds, host, SLURM
job id, start and end time, and the config files of the Snakemake run with their sha256.
``peftir audit`` walks these records back from a table cell. Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Iterator

from ..errors import ActionableError
from ..files import atomic_write
from ..contract.backbones import hub_commits
from ..contract.paths import RESULTS
from .code_version import shipped_path

RECORDS = Path(RESULTS) / "provenance"
CONFIGFILES_ENV = "PEFTIR_CONFIGFILES"   # set by the Snakefile: the run's config files, in order
WORKFLOW_ENV = "PEFTIR_WORKFLOW"         # set by the Snakefile: the workflow's checkout (its git commit)


def record_path(output: str | os.PathLike) -> Path:
    """Where the record of ``output`` (a path relative to the working directory) lives."""
    relative = Path(output)
    if relative.parts and relative.parts[0] == RESULTS:
        relative = Path(*relative.parts[1:])
    return RECORDS / f"{relative}.json"


SNAKEMAKE_MARKER = ".snakemake_timestamp"   # Snakemake touches it in directory outputs after the job
HASHING = 2     # how a directory is hashed (records name it; the audit reads records written with 1 as well)


def _file_blocks(file: Path) -> Iterator[bytes]:
    with open(file, "rb") as handle:
        yield from iter(lambda: handle.read(1 << 20), b"")


def _tree_v1(path: Path, digest) -> None:
    """Records written before ``hashing`` was named: each file's relative name, NUL and content, in name order,
    symlinks followed. Two trees can hash alike ({a: "X", b: "Y"} and {a: "Xb\\0Y"}): read, never written."""
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.name != SNAKEMAKE_MARKER):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        for block in _file_blocks(file):
            digest.update(block)


def _framed(digest, *fields: bytes) -> None:
    for field in fields:
        digest.update(len(field).to_bytes(8, "big") + field)


def _tree_v2(path: Path, digest) -> None:
    """Every entry below ``path`` in name order, each framed by lengths so that no two trees hash alike: a
    folder by its name, a file by its name and content, a symlink by its name and target, never followed (a
    link out of the tree would make the hash depend on files elsewhere)."""
    digest.update(b"peftir-tree-2\0")
    for entry in sorted(path.rglob("*"), key=lambda p: p.relative_to(path).as_posix()):
        name = entry.relative_to(path).as_posix().encode()
        if entry.is_symlink():
            _framed(digest, b"link", name, os.readlink(entry).encode())
        elif entry.is_dir():
            _framed(digest, b"folder", name)
        elif entry.name != SNAKEMAKE_MARKER:
            _framed(digest, b"file", name, str(entry.stat().st_size).encode())
            for block in _file_blocks(entry):
                digest.update(block)


def sha256(path: str | os.PathLike, hashing: int = HASHING) -> str:
    """sha256 of a file (of its bytes, as ``sha256sum`` gives it), or of a directory's tree (``hashing``: how;
    a record's own ``hashing`` says which a digest in it used, 1 when it names none)."""
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_dir():
        if hashing not in (1, 2):
            raise ValueError(f"hashing {hashing}: this version reads 1 and 2")
        (_tree_v1 if hashing == 1 else _tree_v2)(path, digest)
    else:
        for block in _file_blocks(path):
            digest.update(block)
    return digest.hexdigest()


def hashing_of(record: dict) -> int:
    """How the directories' digests in ``record`` were computed (records written before it was named: 1)."""
    return record.get("hashing", 1)


def _git(source: str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", source, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def workflow_checkout() -> str:
    """The checkout of the workflow that runs the job (for its git commit)."""
    return os.environ.get(WORKFLOW_ENV, ".")


def installed_checkout() -> Path:
    """The checkout the installed package comes from (``make install`` installs it editable): the workflow
    files (config.yaml, scripts) an audit compares records with, and the code a re-derivation runs."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "Snakefile").is_file():
        raise FileNotFoundError(f"peftir is not installed from a checkout of the workflow ({root} has no "
                                f"Snakefile): install it with `make install` (pip install -e .)")
    return root


@cache
def git_state(source: str) -> dict:
    """Commit of the workflow's repository and whether tracked files differ from it (None: not a git checkout)."""
    commit = _git(source, "rev-parse", "HEAD")
    status = _git(source, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


@cache
def versions() -> dict[str, str]:
    """Every distribution installed where the job ran, with its version: the numbers were computed by more than
    the well-known few (ir-measures, statsmodels, repro-eval, faiss, scikit-learn, pandas, pysbd...)."""
    return dict(sorted((re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower(), dist.version)     # PEP 503 names
                       for dist in metadata.distributions() if dist.metadata["Name"]))


def _stat(path: str) -> list[int]:
    status = os.stat(path)
    return [status.st_size, status.st_mtime_ns]


def input_sha256(path: str) -> str:
    """sha256 of an input; for a workflow output unchanged since its record was written (same size
    and modification time), the hash its producer recorded. Without this every job would re-read
    large shared inputs (a collection's documents, the BM25 run); ``peftir audit`` re-hashes all. A producer's
    record that hashed directories otherwise (an older ``hashing``) is not reused: a record's digests share one."""
    if Path(path).parts[:1] != (RESULTS,):
        return sha256(path)
    try:
        record = json.loads(record_path(path).read_text())
    except (OSError, ValueError):
        return sha256(path)
    if record.get("stats", {}).get(path) == _stat(path) and hashing_of(record) == HASHING:
        for files in record["outputs"].values():
            if path in files:
                return files[path]
    return sha256(path)


def record_sha256(path: str) -> str | None:
    """sha256 of the provenance record of a workflow output, None for a file the workflow did not make."""
    record = record_path(path)
    return sha256(record) if Path(path).parts[:1] == (RESULTS,) and record.is_file() else None


def files_by_name(named: dict[str, str | list[str]]) -> dict[str, list[str]]:
    """A job's named inputs or outputs, each as a list of paths."""
    return {name: (paths if isinstance(paths, list) else [paths]) for name, paths in named.items()}


def seeds(wildcards: dict, params: dict) -> dict:
    """The seeds behind a job: its training seed and the dataset's fold seed, where they apply."""
    found = {}
    if "seed" in wildcards:
        found["training"] = int(wildcards["seed"])
    folds = params.get("folds", {}).get("folds") if isinstance(params.get("folds"), dict) else None
    if isinstance(folds, dict) and "seed" in folds:
        found["folds"] = folds["seed"]
    return found


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def config_file(path: str, checkout: str) -> dict:
    """A run's config file as records keep it, so that they do not depend on where the checkout is: its
    path relative to the workflow's checkout (``config.yaml``, ``config/paper.yaml``), else to the working
    directory (an overlay beside ``results/``), else absolute (an overlay kept elsewhere), and its sha256."""
    found = Path(path).resolve()
    for base, root in (("checkout", Path(checkout).resolve()), ("workdir", Path.cwd().resolve())):
        if found.is_relative_to(root):
            return {"path": found.relative_to(root).as_posix(), "base": base, "sha256": sha256(found)}
    return {"path": str(found), "base": "absolute", "sha256": sha256(found)}


def workflow_file(path: str, checkout: str | os.PathLike) -> dict:
    """A file the workflow ships (a paper's reported numbers), as a job's param: its path relative to the checkout
    (or ``<package>:<path>`` in an installed system's package, ``code_version.shipped_path``) and its sha256, so the
    job reruns when its content changes and records name no checkout."""
    return {"path": path, "sha256": sha256(shipped_path(path, checkout))}


def read_workflow_file(entry: dict, checkout: str | os.PathLike | None = None) -> Path:
    """A ``workflow_file`` param's file in the checkout (the job's, by default) or its installed package, checked
    unchanged since the workflow was planned."""
    path = shipped_path(entry["path"], workflow_checkout() if checkout is None else checkout)
    if sha256(path) != entry["sha256"]:
        raise ActionableError(f"{entry['path']}: changed since the workflow was planned (sha256 differs); rerun")
    return path


def config_path(entry: dict, checkout: str | os.PathLike) -> Path:
    """Where a recorded config file is now: under ``checkout``, the working directory, or where it was."""
    return {"checkout": Path(checkout), "workdir": Path.cwd(), "absolute": Path("/")}[entry["base"]] / entry["path"]


def job_record(rule: str, wildcards: dict, params: dict, inputs: dict, outputs: dict, started: str,
               ended: str, facts: dict | None = None) -> dict:
    """The record shared by a job's outputs: everything needed to say what produced them, and the ``facts`` the
    job counted of its data, where it noted some (documents exported, indexed, empty). Paths are
    those the job saw (relative to the working directory, which holds ``results/``), the code is named by
    module and content digest (``params.code``), config files relative to the checkout: a record reads
    the same wherever the checkout and the results are."""
    checkout = workflow_checkout()
    configfiles = [path for path in os.environ.get(CONFIGFILES_ENV, "").split(os.pathsep) if path]
    return {
        "rule": rule,
        "wildcards": wildcards,
        "params": params,
        "inputs": {name: {path: input_sha256(path) for path in paths} for name, paths in files_by_name(inputs).items()},
        "input_records": {path: digest for paths in files_by_name(inputs).values() for path in paths
                          for digest in [record_sha256(path)] if digest},
        "outputs": {name: {path: sha256(path) for path in paths} for name, paths in files_by_name(outputs).items()},
        "hashing": HASHING,
        "stats": {path: _stat(path) for paths in files_by_name(outputs).values() for path in paths},
        "git": git_state(checkout),
        "configfiles": [config_file(path, checkout) for path in configfiles],   # in the order Snakemake merged them
        "versions": versions(),
        "hub": hub_commits(),          # the hub backbones the job read, each with the commit it read
        "seeds": seeds(wildcards, params),
        "host": socket.gethostname(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "started": started,
        "ended": ended,
        **({"facts": facts} if facts else {}),
    }


def write_records(record: dict) -> None:
    """One record per output file, written atomically after the outputs are complete."""
    for paths in record["outputs"].values():
        for path in paths:
            target = record_path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(target) as handle:
                json.dump({"file": path, **record}, handle, indent=1, sort_keys=True)


def read_record(output: str | os.PathLike) -> dict:
    path = record_path(output)
    if not path.exists():
        raise FileNotFoundError(f"no provenance record for {output} (expected {path})")
    return json.loads(path.read_text())

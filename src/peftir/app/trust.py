"""A crate checked against what the reviewer trusts, not against itself: ``peftir audit --crate``.

A crate's metadata hashes its own files, so a crate rewritten bottom-up (a run, its metrics, its records and the
metadata's hashes) is consistent with itself. What anchors it is outside it (the reproducible-builds habit: compare
with what you have, not with what you were told):

- the crate's sha256, printed, and checked against the published one with ``--expect``;
- the reviewer's own checkout at the crate's commit: every workflow file the crate ships (rules, scripts, the
  ``peftir`` package, ``config.yaml``, the schema, the paper configurations, the reported numbers) must be the
  commit's, byte for byte (git's blob ids); a file the commit lacks is refused unless it is a config file the run
  named (an overlay), and a tracked file the crate lacks is restored from the commit; a crate made from a checkout
  with uncommitted changes is refused, or with ``--unpublished`` audited and said to be "not from a published
  commit";
- the reviewer's installed system packages: a rule's script that a system shipped in another package brought (the
  crate's ``systems/<package>/``) must be that installed package's, byte for byte;
- the run's configuration against the commit's: every key an overlay outside the commit changed is printed
  ("experiment.seeds: [1] (the commit's: [1, 2, 3])") before any verdict;
- each job record's commit: one the reviewer's history holds, at or before the crate's commit.

The public collections' queries and qrels are exported again from ir_datasets by the audit itself, as for a table
in place (``peftir.app.audit.reexport_collections``), which names each collection it could not export here.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ..contract.paths import RESULTS
from ..pipeline.config import ConfigError, load_config
from ..provenance import records
from ..provenance.code_version import package_directory
from .crate import METADATA, SYSTEM_SCRIPTS, CrateError, Unpacked, git_output as _git, inside_crate

COMMIT = re.compile(r"[0-9a-f]{40}")


def _blobs(checkout: Path, commit: str) -> dict[str, str]:
    """Every file tracked at ``commit``, with its git blob id."""
    listed = _git(checkout, "ls-tree", "-r", "-z", commit).decode().split("\0")
    found = {}
    for line in filter(None, listed):
        meta, path = line.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob":
            found[path] = blob
    return found


def _blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _shipped(root: Path) -> list[str]:
    """The crate's files outside ``results/`` (the workflow's), by relative path."""
    return sorted(path.relative_to(root).as_posix() for top in root.iterdir() if top.name != RESULTS
                  for path in ([top] if top.is_file() else top.rglob("*"))
                  if path.is_file() and path.relative_to(root).as_posix() != METADATA)


def _flat(config: object, key: str = "") -> dict[str, object]:
    if isinstance(config, dict):
        return {k: v for name, value in config.items() for k, v in _flat(value, f"{key}.{name}" if key else
                                                                          str(name)).items()}
    return {key: config}


def _shown(config: dict[str, object], key: str) -> str:
    return repr(config[key]) if key in config else "absent"


def _config_differences(root: Path, named: list[str], checkout: Path, commit: str, tracked: set[str]) -> list[str]:
    """Each key where the run's configuration (the crate's config.yaml and every overlay the run named) differs
    from the commit's (its config.yaml and the overlays it tracks, read from git, not from the crate)."""
    with tempfile.TemporaryDirectory(prefix="peftir-commit-") as scratch:
        archive = subprocess.run(["git", "-C", str(checkout), "archive", "--format=tar", commit],
                                 capture_output=True, check=False)
        if archive.returncode:
            raise CrateError(f"git archive {commit} in {checkout}: {archive.stderr.decode().strip()}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tree:
            tree.extractall(scratch, filter="data")
        try:
            ran = _flat(load_config(root, [root / path for path in named]))
            at_commit = _flat(load_config(scratch, [Path(scratch) / path for path in named if path in tracked]))
        except (OSError, ConfigError, ValueError) as problem:
            raise CrateError(f"the run's configuration cannot be read: {problem}") from None
    return [f"{key}: {_shown(ran, key)} (the commit's: {_shown(at_commit, key)})"
            for key in sorted(set(ran) | set(at_commit)) if _shown(ran, key) != _shown(at_commit, key)]


def _against_packages(root: Path, packaged: list[str]) -> str:
    """The scripts installed system packages shipped (``systems/<package>/<path>`` in the crate) are the reviewer's
    installed packages' files, byte for byte; what the audit says of them."""
    packages, differing = set(), []
    for path in packaged:
        package, _, inside = path.removeprefix(f"{SYSTEM_SCRIPTS}/").partition("/")
        try:
            installed = package_directory(package) / inside
        except ImportError:
            raise CrateError(f"{path}: a rule's script of the system package {package}, which is not installed "
                             f"here: install the version the run used, then audit again") from None
        packages.add(package)
        if not installed.is_file() or installed.read_bytes() != (root / path).read_bytes():
            differing.append(path)
    if differing:
        raise CrateError(f"{len(differing)} rule script(s) differ from the installed system packages' (e.g. "
                         f"{', '.join(differing[:3])}): the run used another version of the package: refused")
    return (f"system packages' scripts: {len(packaged)} of {len(packaged)} equal to the installed "
            f"{', '.join(sorted(packages))}'s")


def _record_commits(root: Path, commit: str, checkout: Path) -> int:
    """The job records' commits: each must be one the reviewer's history holds, at or before ``commit``; how many
    distinct ones there are."""
    claimed: dict[str | None, str] = {}
    for path in sorted((root / records.RECORDS).rglob("*.json")):
        try:
            made = (json.loads(path.read_text()).get("git") or {}).get("commit")
        except (ValueError, AttributeError, RecursionError):
            raise CrateError(f"{path.relative_to(root)}: not a provenance record (not JSON)") from None
        claimed.setdefault(made if isinstance(made, str) else repr(made), path.relative_to(root).as_posix())
    for made, example in claimed.items():
        if not COMMIT.fullmatch(made):
            raise CrateError(f"{example}: its job's commit {made} is not a git commit (40 hex digits): no commit "
                             f"vouches for its code")
        known = subprocess.run(["git", "-C", str(checkout), "merge-base", "--is-ancestor", made, commit],
                               capture_output=True)
        if known.returncode:
            raise CrateError(f"{example}: its job ran at commit {made}, which is not in the history of the crate's "
                             f"commit {commit} in {checkout}")
    return len(claimed)


def _config_file(entry: dict) -> str:
    """A config file the run named, as a path inside the crate; one kept outside the checkout and the working
    directory (an absolute path) is not in the crate, so the configuration could not be confirmed."""
    path = entry["path"]
    if entry["base"] == "absolute" or not isinstance(path, str) or inside_crate(path) is None:
        raise CrateError(f"the run read the config file {path!r} from outside its checkout and working directory: "
                         f"not in the crate, so the run's configuration cannot be confirmed (keep overlays beside "
                         f"results/)")
    return path


def against_commit(unpacked: Unpacked, checkout: Path, unpublished: bool = False) -> list[str]:
    """Check the unpacked crate's workflow files, configuration and records against ``checkout``'s history at the
    crate's commit (see the module's docstring); returns what the audit says of it, or raises ``CrateError``."""
    root, commit = unpacked.root, unpacked.commit
    try:
        _git(checkout, "cat-file", "-e", f"{commit}^{{commit}}")
    except CrateError:
        raise CrateError(f"the crate names commit {commit}, which {checkout} does not have: fetch it, or the crate "
                         f"is not from this project's history") from None
    try:
        table = json.loads((root / records.record_path(unpacked.report)).read_text())
        named = [_config_file(entry) for entry in table["configfiles"]]
        dirty = bool(table["git"]["dirty"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise CrateError(f"no readable provenance record of {unpacked.report}: what made it cannot be told") from None
    blobs = _blobs(checkout, commit)
    overlays = set(named) - set(blobs)
    shipped = _shipped(root)
    packaged = [path for path in shipped if path.startswith(f"{SYSTEM_SCRIPTS}/") and path not in blobs]
    shipped = [path for path in shipped if path not in packaged]
    foreign = [path for path in shipped if path not in blobs and path not in overlays]
    differing = [path for path in shipped if path in blobs and _blob_id(root / path) != blobs[path]]
    said = []
    if foreign or differing:
        which = "; ".join(part for part in (
            f"{len(differing)} workflow file(s) differ from commit {commit}'s (e.g. {', '.join(differing[:3])})"
            if differing else "",
            f"{len(foreign)} file(s) that commit {commit} does not track and the run did not name as config (e.g. "
            f"{', '.join(foreign[:3])})" if foreign else "") if part)
        if not dirty:
            raise CrateError(f"{which}, though the crate says it was made from that commit: refused")
        if not unpublished:
            raise CrateError(f"made from a checkout with uncommitted changes: {which}; not from a published commit "
                             f"(--unpublished audits it anyway, and says so)")
        said.append(f"NOT FROM A PUBLISHED COMMIT: {which}; audited with the crate's files")
    restored = sorted(set(blobs) - set(shipped))
    try:
        for path in restored:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(_git(checkout, "show", f"{commit}:{path}"))
    except OSError as problem:
        raise CrateError(f"cannot restore {path} from commit {commit}: {problem.strerror or problem} (the crate "
                         f"holds something else at that path)") from None
    commits = _record_commits(root, commit, checkout)
    said.append(f"workflow: {len(shipped) - len(differing) - len(foreign) - len(overlays & set(shipped))} of "
                f"{len(blobs)} files "
                f"equal to commit {commit}'s in {checkout}, {len(restored)} restored from it"
                + (f", {len(differing)} differing (above)" if differing else "")
                + (f"; config overlays outside the commit: {', '.join(sorted(overlays))}" if overlays else "")
                + f"; job records from {commits} commit(s), each in its history")
    if packaged:
        said.append(_against_packages(root, packaged))
    changed = _config_differences(root, named, checkout, commit, set(blobs))
    said += ([f"the run's configuration differs from the commit's at {len(changed)} key(s):"]
             + [f"  {line}" for line in changed] if changed else
             ["the run's configuration is the commit's"])
    return said

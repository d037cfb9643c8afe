"""Unpacking a crate a reviewer received: only what its metadata names, inside the scratch folder, within limits,
and one clear line for each malformed crate (``peftir.app.crate.unpack``; the audit of a real crate is in
``tests/test_workflow.py``)."""
import hashlib
import json
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from peftir.app.crate import CrateError, Limits, unpack

TABLE = "results/tables/table5.tex"
WEIGHTS = "results/models/vaswani/colbert/lora/fold1-seed1.pt"
RUN = "results/runs/vaswani/colbert/lora/fold1-seed1.run"
COMMIT = hashlib.sha1(b"a commit").hexdigest()


def _entity(ident: str, data: bytes) -> dict:
    return {"@id": ident, "@type": "File", "sha256": hashlib.sha256(data).hexdigest()}


def _graph(files: dict[str, bytes], extra: list[dict] = (), main: bool = True) -> list[dict]:
    root = {"@id": "./", "@type": "Dataset", "about": {"@id": TABLE},
            "hasPart": [{"@id": f} for f in ["Snakefile", *files]]}
    if main:
        root["mainEntity"] = {"@id": "Snakefile"}
    return [{"@id": "ro-crate-metadata.json", "@type": "CreativeWork", "about": {"@id": "./"},
             "conformsTo": {"@id": "https://w3id.org/ro/crate/1.1"}}, root,
            {"@id": "Snakefile", "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow"], "version": COMMIT,
             "sha256": hashlib.sha256(b"rule all:\n").hexdigest()},
            *(_entity(name, data) for name, data in files.items()), *extra]


def crate(path: Path, files: dict[str, bytes] | None = None, graph: list[dict] | None = None,
          entries: dict[str, bytes] | None = None, links: dict[str, str] | None = None) -> Path:
    """A small crate: ``files`` named by the metadata, ``entries`` in the zip whatever it says, ``links`` symlinks."""
    files = {TABLE: b"\\begin{table}\n", **(files or {})}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ro-crate-metadata.json", json.dumps({"@context": "https://w3id.org/ro/crate/1.1/context",
                                                               "@graph": graph or _graph(files)}))
        archive.writestr("Snakefile", b"rule all:\n")
        for name, data in {**files, **(entries or {})}.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            link = zipfile.ZipInfo(name)
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(link, target)
    return path


def test_a_well_formed_crate_unpacks(tmp_path):
    unpacked = unpack(crate(tmp_path / "c.zip"), tmp_path / "out")
    assert unpacked.report == TABLE and unpacked.commit == COMMIT and unpacked.left_out == {}
    assert (tmp_path / "out" / TABLE).read_bytes() == b"\\begin{table}\n"


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path):
    bomb = crate(tmp_path / "bomb.zip", entries={"results/zeros": bytes(8 * 2**20)})
    assert bomb.stat().st_size < 100_000                  # 8 MB of zeros compress to kilobytes
    (tmp_path / "out").mkdir()
    with pytest.raises(CrateError, match=r"unpacks to \d+ bytes, more than the 1048576 allowed \(--max-bytes\)"):
        unpack(bomb, tmp_path / "out", Limits(bytes=2**20))
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(CrateError, match=r"entries, more than the 2 allowed \(--max-entries\)"):
        unpack(bomb, tmp_path / "out", Limits(entries=2))


@pytest.mark.parametrize("ident", ["/etc/passwd", "/dev/zero", "../outside.txt", "results/../../x", "C:/x"])
def test_an_entity_id_outside_the_crate_is_refused(tmp_path, ident):
    graph = _graph({TABLE: b"\\begin{table}\n"}, extra=[_entity(ident, b"x")])
    with pytest.raises(CrateError, match="is not a path inside the crate"):
        unpack(crate(tmp_path / "c.zip", graph=graph), tmp_path / "out")


@pytest.mark.parametrize("name", ["/tmp/evil", "../evil", "results/../../evil"])
def test_an_entry_outside_the_scratch_folder_is_refused(tmp_path, name):
    with pytest.raises(CrateError, match="is not a path inside the crate"):
        unpack(crate(tmp_path / "c.zip", entries={name: b"x"}), tmp_path / "out")
    assert not (tmp_path / "evil").exists()


def test_a_link_and_a_file_the_metadata_does_not_name_are_refused(tmp_path):
    with pytest.raises(CrateError, match="is not a regular file or folder"):
        unpack(crate(tmp_path / "l.zip", links={"results/link": "/etc/passwd"}), tmp_path / "one")
    with pytest.raises(CrateError, match="holds results/extra.txt, which its metadata does not name"):
        unpack(crate(tmp_path / "u.zip", entries={"results/extra.txt": b"x"}), tmp_path / "two")


def test_malformed_crates_give_one_line(tmp_path):
    (tmp_path / "not.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(CrateError, match="not a readable zip archive"):
        unpack(tmp_path / "not.zip", tmp_path / "a")
    with zipfile.ZipFile(tmp_path / "bare.zip", "w") as archive:
        archive.writestr("results/x", b"x")
    with pytest.raises(CrateError, match="no ro-crate-metadata.json: not an RO-Crate"):
        unpack(tmp_path / "bare.zip", tmp_path / "b")
    with pytest.raises(CrateError, match="does not describe a workflow run"):
        unpack(crate(tmp_path / "m.zip", graph=_graph({TABLE: b"\\begin{table}\n"}, main=False)), tmp_path / "c")


def test_left_out_is_re_derived_not_trusted(tmp_path):
    """A crate may leave out weights (described, not shipped); a run declared left out would never be re-hashed."""
    def declared(path: str, rule: str) -> dict:
        return {"@id": f"#left-out/{path}", "@type": "File", "name": path, "sha256": "0" * 64,
                "additionalType": "left-out", "description": "trust me"}

    def record(path: str, rule: str) -> tuple[str, bytes]:
        relative = path.removeprefix("results/")
        return f"results/provenance/{relative}.json", json.dumps({"rule": rule, "params": {}}).encode()

    weights_record, run_record = record(WEIGHTS, "train"), record(RUN, "rerank")
    files = {TABLE: b"\\begin{table}\n", weights_record[0]: weights_record[1], run_record[0]: run_record[1]}
    kept = unpack(crate(tmp_path / "w.zip", graph=_graph(files, extra=[declared(WEIGHTS, "train")]), files=files),
                  tmp_path / "w")
    assert list(kept.left_out) == [WEIGHTS] and "model weights" in kept.left_out[WEIGHTS]
    with pytest.raises(CrateError, match=f"declares {RUN} left out, but a crate never leaves out such a file"):
        unpack(crate(tmp_path / "r.zip", graph=_graph(files, extra=[declared(RUN, "rerank")]), files=files),
               tmp_path / "r")


def test_the_audit_prints_the_crates_sha256_and_checks_the_published_one(tmp_path):
    made = crate(tmp_path / "c.zip")
    digest = hashlib.sha256(made.read_bytes()).hexdigest()
    command = [sys.executable, "-m", "peftir.app.cli", "audit", "--crate", str(made), "--scratch", str(tmp_path / "s")]
    wrong = subprocess.run([*command, "--expect", "0" * 64], capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 1 and f"sha256 {digest}" in wrong.stdout and "not the published crate" in wrong.stdout
    bomb = subprocess.run([*command, "--max-bytes", "10"], capture_output=True, text=True, timeout=120)
    assert bomb.returncode == 1 and "more than the 10 allowed (--max-bytes)" in bomb.stdout
    assert "Traceback" not in bomb.stdout + bomb.stderr and list((tmp_path / "s").iterdir()) == []


def test_a_failed_crate_build_leaves_nothing_beside_the_crate(tmp_path, monkeypatch):
    from peftir.app import crate as crates

    class Failing:                              # writes half a zip, then fails, as a full disk would
        def __init__(self, *args):
            pass

        def build(self, output: Path) -> None:
            output.write_bytes(b"PK half")
            raise OSError("No space left on device")

    monkeypatch.setattr(crates, "chain_of", lambda report: crates.Chain())
    monkeypatch.setattr(crates, "CrateWriter", Failing)
    with pytest.raises(OSError, match="No space left"):
        crates.build_crate(TABLE, tmp_path / "table5.crate.zip", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_each_job_records_commit_must_be_in_the_history_of_the_crates(tmp_path):
    from peftir.app.trust import _record_commits

    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    commits = []
    for message in ("first", "second"):
        subprocess.run([*git, "commit", "--quiet", "--allow-empty", "-m", message], check=True)
        commits.append(subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    crate_root = tmp_path / "crate"
    records = crate_root / "results/provenance/runs"
    records.mkdir(parents=True)
    (records / "a.run.json").write_text(json.dumps({"git": {"commit": commits[0]}}))    # an older job, kept
    assert _record_commits(crate_root, commits[1], repo) == 1
    (records / "b.run.json").write_text(json.dumps({"git": {"commit": "f" * 40}}))       # a commit nobody has
    with pytest.raises(CrateError, match="not in the history of the crate's commit"):
        _record_commits(crate_root, commits[1], repo)
    (records / "b.run.json").write_text(json.dumps({"git": {"commit": commits[1]}}))    # a job after the crate's
    with pytest.raises(CrateError, match=f"runs/b.run.json: its job ran at commit {commits[1]}"):
        _record_commits(crate_root, commits[0], repo)


def test_a_crate_that_cannot_vouch_for_a_result_or_names_no_commit_is_refused_in_one_line(tmp_path):
    graph = _graph({TABLE: b"\\begin{table}\n"}, extra=[{"@id": RUN, "@type": "File", "sha256": ""}])
    with pytest.raises(CrateError, match="has no sha256 .*a result the crate cannot vouch for"):
        unpack(crate(tmp_path / "h.zip", graph=graph, entries={RUN: b"1 Q0 d 1 1.0 t\n"}), tmp_path / "h")
    clash = crate(tmp_path / "c.zip", graph=_graph({TABLE: b"x", f"{TABLE}/inner": b"y"}),
                  files={f"{TABLE}/inner": b"y"})
    with pytest.raises(CrateError, match="cannot be unpacked"):
        unpack(clash, tmp_path / "c")
    graph = _graph({TABLE: b"\\begin{table}\n"})
    graph[2]["version"] = "HEAD~3"
    with pytest.raises(CrateError, match="is not a git commit"):
        unpack(crate(tmp_path / "v.zip", graph=graph), tmp_path / "v")


# --- the crate against the reviewer's checkout (peftir.app.trust) ---------------------------------------------

@pytest.fixture(scope="module")
def reviewer(tmp_path_factory) -> tuple[Path, str]:
    from checkout import clone

    repo = clone(tmp_path_factory.mktemp("reviewer") / "repo")
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return repo, commit


def _unpacked_at(tmp_path: Path, reviewer: tuple[Path, str], overlay: str | None = None, dirty: bool = False,
                 configfiles: list[dict] | None = None):
    """A crate unpacked as the commit's tracked files, a run's overlay and the table's record."""
    import io
    import tarfile

    from peftir.app.crate import Unpacked

    repo, commit = reviewer
    root = tmp_path / "crate"
    tree = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tree)) as archive:
        archive.extractall(root, filter="data")
    named = []
    if overlay is not None:
        (root / "run.yaml").write_text(overlay)
        named = [{"path": "run.yaml", "base": "checkout", "sha256": "0" * 64}]
    record = root / "results/provenance/tables/table5.tex.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"git": {"commit": commit, "dirty": dirty},
                                  "configfiles": configfiles if configfiles is not None else named}))
    return Unpacked(root=root, report=TABLE, commit=commit, left_out={})


def test_a_crate_at_its_commit_says_so_and_names_every_key_its_overlay_changed(tmp_path, reviewer):
    from peftir.app.trust import against_commit

    unpacked = _unpacked_at(tmp_path, reviewer, overlay="experiment: {seeds: [1]}\n")
    (unpacked.root / "README.md").unlink()                  # a tracked file the crate lacks: the commit's is used
    said = against_commit(unpacked, reviewer[0])
    assert re.match(rf"workflow: (\d+) of (\d+) files equal to commit {reviewer[1]}'s .*, 1 restored from it; config "
                    r"overlays outside the commit: run.yaml; job records from 1 commit\(s\)", said[0]), said
    assert int(re.match(r"workflow: (\d+) of (\d+)", said[0])[1]) == int(re.match(r"workflow: (\d+) of (\d+)",
                                                                                    said[0])[2]) - 1
    assert "  experiment.seeds: [1] (the commit's: [1, 2, 3])" in said
    assert (unpacked.root / "README.md").read_bytes() == subprocess.run(
        ["git", "-C", str(reviewer[0]), "show", f"{reviewer[1]}:README.md"], capture_output=True, check=True).stdout


def test_a_workflow_file_that_is_not_the_commits_is_refused_or_said_unpublished(tmp_path, reviewer):
    from peftir.app.trust import against_commit

    clean = _unpacked_at(tmp_path / "clean", reviewer)
    config = clean.root / "config.yaml"
    config.write_text(config.read_text().replace("  seeds: [1, 2, 3]", "  seeds: [1]", 1))
    with pytest.raises(CrateError, match=r"1 workflow file\(s\) differ from commit .*\(e.g. config.yaml\), though "
                                         r"the crate says it was made from that commit"):
        against_commit(clean, reviewer[0])
    dirty = _unpacked_at(tmp_path / "dirty", reviewer, dirty=True)
    config = dirty.root / "config.yaml"
    config.write_text(config.read_text().replace("  seeds: [1, 2, 3]", "  seeds: [1]", 1))
    with pytest.raises(CrateError, match="uncommitted changes: .* not from a published commit"):
        against_commit(dirty, reviewer[0])
    said = against_commit(dirty, reviewer[0], unpublished=True)
    assert said[0].startswith("NOT FROM A PUBLISHED COMMIT: 1 workflow file(s) differ")
    assert "  experiment.seeds: [1] (the commit's: [1, 2, 3])" in said      # the commit's read from git


@pytest.mark.parametrize("entry", [{"path": "../outside.yaml", "base": "checkout"},
                                   {"path": "/etc/overlay.yaml", "base": "workdir"},
                                   {"path": "home/me/overlay.yaml", "base": "absolute"}])
def test_a_config_file_outside_the_crate_is_refused(tmp_path, reviewer, entry):
    from peftir.app.trust import against_commit

    with pytest.raises(CrateError, match="from outside its checkout and working directory"):
        against_commit(_unpacked_at(tmp_path, reviewer, configfiles=[entry]), reviewer[0])


def test_a_crate_of_uncommitted_work_refuses_untracked_files_but_carries_the_runs_overlay(tmp_path):
    from peftir.app.crate import workflow_files

    repo = tmp_path / "repo"
    repo.mkdir()
    git = lambda *args: subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)  # noqa: E731
    git("init", "--quiet")
    (repo / "Snakefile").write_text("rule all:\n")
    git("add", "Snakefile")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "start")
    commit = git("rev-parse", "HEAD").stdout.decode().strip()
    (repo / "Snakefile").write_text("rule all:\n    input: []\n")                  # uncommitted work
    (repo / "run.yaml").write_text("seeds: [1]\n")                                  # the run's overlay
    (repo / "notes.txt").write_text("a private note\n")                             # not the workflow's
    with pytest.raises(CrateError, match=r"1 untracked file\(s\) in the checkout .*: notes.txt\. .*git add"):
        workflow_files(repo, commit, True, tmp_path / "out", frozenset({"run.yaml"}))
    assert not (tmp_path / "out").exists()
    assert workflow_files(repo, commit, False, tmp_path / "clean") == ["Snakefile"]   # the commit's, nothing else
    git("add", "notes.txt")                                                           # staged: part of the work
    assert sorted(workflow_files(repo, commit, True, tmp_path / "staged", frozenset({"run.yaml"}))) == [
        "Snakefile", "notes.txt"]
    assert (tmp_path / "staged" / "Snakefile").read_text() == "rule all:\n    input: []\n"


def test_queries_and_qrels_are_re_exported_from_ir_datasets_and_an_edit_with_its_hashes_redone_is_caught(
        irds_home, tmp_path, monkeypatch):
    """Qrels edited in a results folder or a crate, with the record's hashes (and everything after) redone, pass
    every hash check; the audit exports the collection's queries and qrels again from what ir_datasets has here and
    compares. A collection ir_datasets would have to download is named, not fetched."""
    from peftir.app.audit import NOT_REEXPORTED, REEXPORTED, reexport_collections
    from peftir.reports.auditor import AuditFailure, Auditor
    from peftir.data.reexport import reexport
    from peftir.provenance import records

    monkeypatch.chdir(tmp_path)
    spec = {"irds": "vaswani", "query_field": "text", "doc_fields": ["text"]}
    exported = reexport(spec, tmp_path / "results/data/vaswani")
    qrels = exported["qrels"]

    versions = {"ir-datasets": records.versions()["ir-datasets"]}

    def chain(spec: dict) -> Auditor:
        outputs = {name: {f"results/data/vaswani/{path.name}": records.sha256(path)} for name, path in
                   exported.items()}
        return Auditor(verified={"results/data/vaswani/queries.tsv": {
            "rule": "download", "params": {"export": spec}, "outputs": outputs, "versions": versions}})

    honest = chain(spec)
    reexport_collections(honest)
    assert honest.done[REEXPORTED] == {"results/data/vaswani/queries.tsv"}
    first, rest = qrels.read_text().split("\n", 1)
    assert first == "1 0 10081 1"
    qrels.write_text(f"1 0 10082 1\n{rest}")                         # a judgement moved to another document
    with pytest.raises(AuditFailure, match=r"qrels.txt: not the qrels ir_datasets .* exports for vaswani"):
        reexport_collections(chain(spec))
    elsewhere = chain({**spec, "irds": "antique/test"})
    reexport_collections(elsewhere)
    assert REEXPORTED not in elsewhere.done
    assert [why.split(" (")[0] for why in elsewhere.done[NOT_REEXPORTED]] == ["antique/test"]
    assert "is not in the ir_datasets cache" in next(iter(elsewhere.done[NOT_REEXPORTED]))
    versions["ir-datasets"] = "0.0.1"                      # exported with another ir_datasets: said, not judged
    other = chain(spec)
    reexport_collections(other)
    assert "exported with ir_datasets 0.0.1" in next(iter(other.done[NOT_REEXPORTED]))


def test_a_collection_another_job_built_is_named_once_whichever_of_its_queries_the_chain_reads():
    """A CLIR collection job writes one queries file per language and a table's chain may read any of them (NeuCLIR's
    ru-ru reads only the Russian): the collection is counted and named as not re-exported, once."""
    from peftir.app.audit import NOT_REEXPORTED, reexport_collections
    from peftir.reports.auditor import Auditor

    made = {"rule": "clir_collection", "params": {}, "versions": {},
            "outputs": {"queries": {f"results/modular-clir/collection/{language}/queries.tsv": "0" * 64
                                    for language in ("en", "ru")}}}
    for read in (["ru"], ["en", "ru"]):
        auditor = Auditor(verified={f"results/modular-clir/collection/{language}/queries.tsv": dict(made)
                                    for language in read})
        reexport_collections(auditor)
        assert auditor.done[NOT_REEXPORTED] == {
            "results/modular-clir/collection/en/queries.tsv, results/modular-clir/collection/ru/queries.tsv (made by "
            "rule clir_collection, not by an ir_datasets export the audit can repeat)"}

"""Unpacking a crate a reviewer received: only what its metadata names, inside the scratch folder, within limits,
and one clear line for each malformed crate (``peftir.app.crate.unpack``; the audit of a real crate is in
``tests/test_workflow.py``)."""
import hashlib
import json
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


def _entity(ident: str, data: bytes) -> dict:
    return {"@id": ident, "@type": "File", "sha256": hashlib.sha256(data).hexdigest()}


def _graph(files: dict[str, bytes], extra: list[dict] = (), main: bool = True) -> list[dict]:
    root = {"@id": "./", "@type": "Dataset", "about": {"@id": TABLE}, "hasPart": [{"@id": f} for f in ["Snakefile", *files]]}
    if main:
        root["mainEntity"] = {"@id": "Snakefile"}
    return [{"@id": "ro-crate-metadata.json", "@type": "CreativeWork", "about": {"@id": "./"},
             "conformsTo": {"@id": "https://w3id.org/ro/crate/1.1"}}, root,
            {"@id": "Snakefile", "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow"], "version": "abc",
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
    assert unpacked.report == TABLE and unpacked.commit == "abc" and unpacked.left_out == {}
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

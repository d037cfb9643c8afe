"""Provenance records, code versions by content, TREC files and their ir_metadata, training checkpoints."""
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from peftir.data import trec
from peftir.provenance import code_version, records
from peftir.provenance.ir_metadata import ir_metadata
from peftir.training.checkpoint import Checkpoint

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"


def test_a_rules_code_is_what_its_script_runs_without_the_infrastructure():
    table, train = code_version.modules(str(SCRIPTS / "table.py")), code_version.modules(str(SCRIPTS / "train.py"))
    assert {"peftir.semi_siamese.tables", "peftir.reports.tables", "peftir.reports.cells", "peftir.evaluation.stats",
            "peftir.semi_siamese.contract"} <= set(table)
    assert not any(m.startswith(("peftir.training", "peftir.models", "peftir.semi_siamese.methods",
                                 "peftir.semi_siamese.loop", "peftir.semi_siamese.rankers")) for m in table)
    assert {"peftir.semi_siamese.loop", "peftir.semi_siamese.methods.lora", "peftir.semi_siamese.methods.ss_lora",
            "peftir.semi_siamese.rankers", "peftir.evaluation.metrics"} <= set(train)   # validation is scored in training
    assert "peftir.evaluation.stats" not in train and "peftir.reports.tables" not in train
    for modules in (table, train):
        assert not any(m.startswith(code_version.INFRASTRUCTURE) for m in modules)


def test_a_script_importing_an_unknown_module_is_an_error(tmp_path):
    (tmp_path / "bad.py").write_text("from peftir.nothing import x\n")
    with pytest.raises(ImportError, match="not a module"):
        code_version.modules(str(tmp_path / "bad.py"))


@pytest.mark.parametrize("edit, counts", [
    ("# a comment\n", False),
    ('"""A docstring."""\n', False),
    ("def f(x):\n    log.info('a new message %s', x)\n    print('progress', file=sys.stderr)\n    return x\n", None),
    ("def f(x):\n    return x + 1\n", True),
])
def test_digests_ignore_comments_docstrings_and_log_statements(tmp_path, edit, counts):
    base = tmp_path / "base.py"
    base.write_text("import sys\n\ndef f(x):\n    return x\n")
    edited = tmp_path / "edited.py"
    edited.write_text(base.read_text().replace("def f(x):\n    return x\n", edit) if counts is None
                      else base.read_text() + edit)
    same = code_version.digest(base) == code_version.digest(edited)
    assert same is (counts is not True)


def test_directory_hashes_cover_names_and_contents(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("1")
    first = records.sha256(tmp_path / "a")
    (tmp_path / "a" / "x").write_text("2")
    second = records.sha256(tmp_path / "a")
    (tmp_path / "a" / "x").rename(tmp_path / "a" / "y")
    assert len({first, second, records.sha256(tmp_path / "a")}) == 3


def test_directory_hashes_are_framed_by_lengths_and_record_links_unfollowed(tmp_path):
    """Two different trees hashed alike when names and contents were only concatenated; a link was followed, so
    the hash depended on a file outside the tree. Both are read the old way (``hashing`` 1) for older records."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    (one / "a").write_text("X"), (one / "b").write_text("Y")
    (two / "a").write_bytes(b"Xb\0Y")
    assert records.sha256(one, 1) == records.sha256(two, 1)                  # the old collision, still readable
    assert records.sha256(one) != records.sha256(two) and records.HASHING == 2
    outside = tmp_path / "outside.txt"
    outside.write_text("first")
    (one / "link").symlink_to(outside)
    linked = records.sha256(one)
    outside.write_text("second")
    assert records.sha256(one) == linked                                     # the link, not what it points at
    (one / "link").unlink()
    (one / "link").symlink_to(tmp_path / "elsewhere.txt")
    assert records.sha256(one) != linked
    (one / "empty").mkdir()
    assert records.sha256(one) != records.sha256(one, 1) and records.sha256(tmp_path / "outside.txt", 1) == \
        records.sha256(tmp_path / "outside.txt")                             # a file is its bytes either way


def test_the_audit_checks_a_folder_by_the_hashing_its_record_names(tmp_path, monkeypatch):
    """A record written before folders were framed names no ``hashing``: its folders are re-hashed the old way,
    and a record that names today's is held to it; a producer's digest is reused only under today's hashing."""
    from peftir.reports.auditor import AuditFailure, Auditor

    monkeypatch.chdir(tmp_path)
    Path("results/models/m").mkdir(parents=True)
    Path("results/models/m/weights.bin").write_bytes(b"w" * 10)
    record = records.job_record("train", {}, {}, {}, {"model": "results/models/m"}, "t0", "t1")
    assert record["hashing"] == 2 and record["outputs"]["model"]["results/models/m"] == \
        records.sha256("results/models/m")
    old = {key: value for key, value in record.items() if key != "hashing"}
    old["outputs"]["model"]["results/models/m"] = records.sha256("results/models/m", 1)
    records.write_records(old)
    assert Auditor().verify("results/models/m", inputs=False)["rule"] == "train"
    assert records.input_sha256("results/models/m") == records.sha256("results/models/m")   # not the old digest
    records.write_records({**old, "hashing": 2})
    with pytest.raises(AuditFailure, match="sha256 differs"):
        Auditor().verify("results/models/m", inputs=False)


def test_records_live_under_results_provenance():
    assert records.record_path("results/runs/v/bm25.run") == Path("results/provenance/runs/v/bm25.run.json")


def test_a_record_holds_inputs_outputs_params_seeds_versions_and_the_slurm_job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv(records.WORKFLOW_ENV, str(SCRIPTS.parents[1]))
    Path("results/data").mkdir(parents=True)
    trec.write_topics("results/data/queries.tsv", {str(i): f"query {i}" for i in range(1, 11)})
    Path("results/data/folds.json").write_text("{}")
    record = records.job_record("folds", {"dataset": "toy"}, {"folds": {"folds": {"scheme": "seeded", "seed": 3}}},
                                {"queries": "results/data/queries.tsv"}, {"folds": "results/data/folds.json"},
                                "t0", "t1")
    records.write_records(record)
    stored = json.loads(records.record_path("results/data/folds.json").read_text())
    assert stored["rule"] == "folds" and stored["slurm_job_id"] == "4242"
    assert stored["outputs"]["folds"]["results/data/folds.json"] == records.sha256("results/data/folds.json")
    assert stored["inputs"]["queries"]["results/data/queries.tsv"] == records.sha256("results/data/queries.tsv")
    assert stored["seeds"] == {"folds": 3}
    assert stored["versions"]["torch"] == torch.__version__
    assert {"ir-measures", "statsmodels", "repro-eval", "faiss-cpu", "scikit-learn", "pandas", "pysbd",
            "ir-datasets"} <= set(stored["versions"])          # every distribution, by its normalised name
    assert len(stored["git"]["commit"]) == 40


def test_a_record_names_no_place_of_the_checkout_or_the_results(tmp_path, monkeypatch):
    """Config files relative to the checkout or the working directory, code by module and digest: a record
    reads the same wherever the checkout and the results are (a moved copy audits)."""
    checkout = SCRIPTS.parents[1]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "overlay.yaml").write_text("seeds: [1]\n")
    monkeypatch.setenv(records.WORKFLOW_ENV, str(checkout))
    monkeypatch.setenv(records.CONFIGFILES_ENV, os.pathsep.join([str(checkout / "config.yaml"),
                                                                  str(tmp_path / "overlay.yaml")]))
    Path("results").mkdir()
    Path("results/out.txt").write_text("x")
    params = {"code": code_version.code_version(str(SCRIPTS / "evaluate.py"), str(checkout))}
    record = records.job_record("evaluate", {}, params, {}, {"out": "results/out.txt"}, "t0", "t1")
    assert [(c["path"], c["base"]) for c in record["configfiles"]] == [("config.yaml", "checkout"),
                                                                       ("overlay.yaml", "workdir")]
    text = json.dumps(record)
    assert str(checkout) not in text and str(tmp_path) not in text
    assert records.config_path(record["configfiles"][1], checkout) == tmp_path / "overlay.yaml"
    assert records.config_path(record["configfiles"][0], "/elsewhere") == Path("/elsewhere/config.yaml")


def test_runs_are_plain_trec_with_their_ir_metadata_beside_them(tmp_path):
    import ir_measures
    import yaml

    from peftir.provenance.ir_metadata import write_ir_metadata

    metadata = ir_metadata("t", {"ranker": "colbert", "settings": {"rank": 16}}, {"name": "vaswani"})
    assert metadata == ir_metadata("t", {"ranker": "colbert", "settings": {"rank": 16}}, {"name": "vaswani"})
    trec.write_run(tmp_path / "r.run", {"1": {"d1": 1.0, "d2": 2.0}}, tag="t")
    write_ir_metadata(tmp_path / "r.ir_metadata.yaml", metadata)
    assert (tmp_path / "r.run").read_text() == "1 Q0 d2 1 2.0 t\n1 Q0 d1 2 1.0 t\n"
    assert yaml.safe_load((tmp_path / "r.ir_metadata.yaml").read_text())["method"]["settings"] == {"rank": 16}
    assert trec.read_run(tmp_path / "r.run") == {"1": {"d1": 1.0, "d2": 2.0}}
    assert [(r.query_id, r.doc_id, r.score) for r in ir_measures.read_trec_run(str(tmp_path / "r.run"))] == [
        ("1", "d2", 2.0), ("1", "d1", 1.0)]


@pytest.mark.parametrize("text, message", [
    ("# ir_metadata.start\n1 Q0 d1 1 1.0 t\n", r"r.run, line 1: not a TREC run line .*2 columns"),
    ("1 Q0 d1 1 1.0 t\n1 Q0 d2 2 x t\n", r"r.run, line 2: not a TREC run line"),
    ("1 Q0 d1 1 1.0\n", r"r.run, line 1: .*5 columns"),
    ("1 Q0 d1 1 1.0 t\n1 Q0 d2 2 nan t\n", r"r.run, line 2: .*score 'nan' is not a finite number"),
    ("1 Q0 d1 1 -inf t\n", r"r.run, line 1: .*score '-inf' is not a finite number"),
])
def test_a_malformed_run_line_is_named_by_file_and_line(tmp_path, text, message):
    (tmp_path / "r.run").write_text(text)
    with pytest.raises(trec.MalformedFileError, match=message):
        trec.read_run(tmp_path / "r.run")


def test_a_run_with_a_non_finite_score_is_refused_and_not_written(tmp_path):
    with pytest.raises(trec.NonFiniteScoreError,
                       match=r"r.run: query 2: 1 non-finite score\(s\) \(documents d3: nan\)"):
        trec.write_run(tmp_path / "r.run", {"1": {"d1": 1.0}, "2": {"d2": 0.5, "d3": float("nan")}}, tag="t")
    assert list(tmp_path.iterdir()) == []


def test_a_rerun_removes_its_own_leftovers_and_not_a_concurrent_jobs_of_a_longer_name(tmp_path):
    from peftir.files import atomic_directory

    own = tmp_path / ".x.k1ll3d_0.part"              # a killed job's temporary, as tempfile names it
    other = tmp_path / ".x.y.w0rk1ng_.part"          # the running job of a dataset named x.y
    own.mkdir(), other.mkdir()
    with atomic_directory(tmp_path / "x") as building:
        (building / "done").write_text("")
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "x"]


def test_malformed_qrels_and_topics_are_named_by_file_and_line(tmp_path):
    (tmp_path / "qrels.txt").write_text("1 0 d1 1\n1 0 d2 relevant\n")
    with pytest.raises(trec.MalformedFileError, match=r"qrels.txt, line 2: not a qrels line"):
        trec.read_qrels(tmp_path / "qrels.txt")
    (tmp_path / "q.tsv").write_text("1\tfirst\n2\t \n")
    with pytest.raises(trec.MalformedFileError, match=r"q.tsv, line 2: expected query id<TAB>non-empty text"):
        trec.read_topics(tmp_path / "q.tsv")
    (tmp_path / "q.tsv").write_text("1 a\tfirst\n")
    with pytest.raises(trec.MalformedFileError, match=r"q.tsv, line 1: query id '1 a' is empty or holds whitespace"):
        trec.read_topics(tmp_path / "q.tsv")


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_checkpoint_is_loaded_without_unpickling_code(tmp_path, monkeypatch):
    import random

    from peftir.errors import ActionableError
    from peftir.training.checkpoint import restore_rng_states, rng_states

    rng = random.Random(7)
    Checkpoint(tmp_path / "c.ckpt", key="a").save({"rng": rng_states(rng)})
    expected = [rng.random(), random.random(), float(np.random.rand()), float(torch.rand(1))]
    restore_rng_states(rng, Checkpoint(tmp_path / "c.ckpt", key="a").load()["rng"])
    assert [rng.random(), random.random(), float(np.random.rand()), float(torch.rand(1))] == expected
    monkeypatch.chdir(tmp_path)
    torch.save({"key": "a", "evil": _Payload()}, tmp_path / "c.ckpt")
    with pytest.raises(ActionableError, match="c.ckpt holds more than tensors and plain values"):
        Checkpoint(tmp_path / "c.ckpt", key="a").load()
    assert not (tmp_path / "pwned").exists()


def test_a_checkpoint_of_other_settings_is_not_resumed(tmp_path):
    Checkpoint(tmp_path / "c.ckpt", key="a").save({"epoch": 3})
    assert Checkpoint(tmp_path / "c.ckpt", key="a").load()["epoch"] == 3
    assert Checkpoint(tmp_path / "c.ckpt", key="b").load() is None
    Checkpoint(tmp_path / "c.ckpt", key="a").remove()
    assert not (tmp_path / "c.ckpt").exists() and not os.listdir(tmp_path)


def test_an_unchanged_workflow_input_reuses_its_producers_hash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("results").mkdir()
    Path("results/a.txt").write_text("made by a job")
    record = records.job_record("r", {}, {}, {}, {"out": "results/a.txt"}, "t0", "t1")
    records.write_records(record)
    assert records.input_sha256("results/a.txt") == records.sha256("results/a.txt")
    stale = json.loads(records.record_path("results/a.txt").read_text())
    stale["outputs"]["out"]["results/a.txt"] = "recorded"
    records.record_path("results/a.txt").write_text(json.dumps(stale))
    assert records.input_sha256("results/a.txt") == "recorded"       # same size and time: not re-read
    Path("results/a.txt").write_text("changed by hand")
    assert records.input_sha256("results/a.txt") == records.sha256("results/a.txt")

"""Provenance records, the code inputs of rules, and training checkpoints."""
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import peftir

from peftir import provenance, runner, trec
from peftir.code import modules_used
from peftir.runner import Job, execute
from peftir.training import Checkpoint


def _names(module: str) -> set[str]:
    """The package files of a job module's closure, relative to the package (``jobs/common.py``)."""
    return {Path(p).relative_to(Path(peftir.__file__).parent).as_posix() for p in modules_used(module)}


def test_a_rules_code_is_the_import_closure_of_its_job_module():
    reports, ranking = _names("peftir.jobs.reports"), _names("peftir.jobs.ranking")
    assert {"stats.py", "tables.py", "figures.py", "runner.py", "provenance.py"} <= reports
    assert "training.py" not in reports and "rankers.py" not in reports
    assert {"training.py", "methods.py", "prefix.py", "semi_siamese.py", "rankers.py", "jobs/common.py"} <= ranking
    assert "stats.py" not in ranking and "tables.py" not in ranking
    assert "bm25.py" not in _names("peftir.jobs.folding")


def test_an_unknown_job_module_is_an_error():
    with pytest.raises(ImportError, match="not a module"):
        modules_used("peftir.jobs.nothing")


def test_directory_hashes_cover_names_and_contents(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("1")
    first = provenance.sha256(tmp_path / "a")
    (tmp_path / "a" / "x").write_text("2")
    second = provenance.sha256(tmp_path / "a")
    (tmp_path / "a" / "x").rename(tmp_path / "a" / "y")
    assert len({first, second, provenance.sha256(tmp_path / "a")}) == 3


def test_records_live_under_results_provenance():
    assert provenance.record_path("results/runs/v/bm25.run") == Path("results/provenance/runs/v/bm25.run.json")


def test_a_job_run_through_the_runner_gets_a_record_of_each_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("results/data").mkdir(parents=True)
    trec.write_topics("results/data/queries.tsv", {str(i): f"query {i}" for i in range(1, 11)})
    job = Job(rule="folds", input={"queries": "results/data/queries.tsv"},
              output={"folds": "results/data/folds.json"}, params={"spec": {"folds": {"scheme": "seeded", "n": 5,
                                                                                        "seed": 3}}},
              wildcards={"dataset": "toy"}, log="results/logs/folds.log", source=str(Path(__file__).parents[1]))
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    smk = SimpleNamespace(rule=job.rule, threads=1, input=job.input, output=job.output, params=job.params,
                          wildcards=job.wildcards, log=[job.log],   # what runner.run reads of Snakemake's object
                          scriptdir=str(Path(__file__).parents[1] / "workflow" / "scripts"))
    runner.run("peftir.jobs.folding:make_folds", smk)
    record = json.loads(provenance.record_path("results/data/folds.json").read_text())
    assert record["rule"] == "folds" and record["slurm_job_id"] == "4242"
    assert record["outputs"]["folds"]["results/data/folds.json"] == provenance.sha256("results/data/folds.json")
    assert record["inputs"]["queries"]["results/data/queries.tsv"] == provenance.sha256("results/data/queries.tsv")
    assert record["seeds"] == {"folds": 3}
    assert record["versions"]["torch"] == torch.__version__
    assert len(record["git"]["commit"]) == 40
    assert record["started"] <= record["ended"]


def test_a_failed_job_writes_no_record(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    job = Job(rule="folds", input={"queries": "missing.tsv"}, output={"folds": "folds.json"},
              params={"spec": {}}, wildcards={"dataset": "toy"})
    assert execute("peftir.jobs.folding:make_folds", job) == 1
    assert not provenance.record_path("folds.json").exists()


def test_run_headers_are_ir_metadata_comments_that_readers_skip(tmp_path):
    header = provenance.ir_metadata("t", {"ranker": "colbert", "settings": {"rank": 16}}, {"name": "vaswani"},
                                    str(Path(__file__).parents[1]))
    assert header[0] == "ir_metadata.start" and header[-1] == "ir_metadata.end"
    assert header == provenance.ir_metadata("t", {"ranker": "colbert", "settings": {"rank": 16}},
                                            {"name": "vaswani"}, str(Path(__file__).parents[1]))
    trec.write_run(tmp_path / "r.run", {"1": {"d1": 1.0, "d2": 2.0}}, tag="t", header=header)
    assert (tmp_path / "r.run").read_text().startswith("# ir_metadata.start\n")
    assert trec.read_run(tmp_path / "r.run") == {"1": {"d1": 1.0, "d2": 2.0}}


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
    record = provenance.job_record("r", {}, {}, {}, {"out": "results/a.txt"}, ".", "t0", "t1")
    provenance.write_records(record)
    assert provenance.input_sha256("results/a.txt") == provenance.sha256("results/a.txt")
    stale = json.loads(provenance.record_path("results/a.txt").read_text())
    stale["outputs"]["out"]["results/a.txt"] = "recorded"
    provenance.record_path("results/a.txt").write_text(json.dumps(stale))
    assert provenance.input_sha256("results/a.txt") == "recorded"       # same size and time: not re-read
    Path("results/a.txt").write_text("changed by hand")
    assert provenance.input_sha256("results/a.txt") == provenance.sha256("results/a.txt")

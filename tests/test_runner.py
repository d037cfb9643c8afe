"""Job execution: in-process and through the warm worker, with statuses and logs."""
import json
import os
import subprocess
import sys
import time

import pytest

from peftir.runner import Job, execute, submit


def folds_job(tmp_path, queries: str) -> Job:
    (tmp_path / "queries.tsv").write_text(queries)
    return Job(rule="folds", input={"queries": str(tmp_path / "queries.tsv")},
               output={"folds": str(tmp_path / "folds.json")},
               params={"spec": {"folds": {"scheme": "seeded", "n": 3, "seed": 1}}},
               wildcards={"dataset": "toy"}, log=str(tmp_path / "folds.log"))


QUERIES = "".join(f"q{i}\ttext {i}\n" for i in range(9))


def test_in_process_job_writes_output_and_failure_goes_to_the_log(tmp_path, capfd):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir(), bad.mkdir()
    assert execute("peftir.jobs.folding:make_folds", folds_job(good, QUERIES)) == 0
    assert sorted(json.loads((good / "folds.json").read_text())["folds"]) == ["1", "2", "3"]
    assert execute("peftir.jobs.folding:make_folds", folds_job(bad, "")) == 1      # no queries: no folds
    assert not (bad / "folds.json").exists()
    assert "Traceback" in (bad / "folds.log").read_text()
    print("after the job")                                                   # output restored
    assert "after the job" in capfd.readouterr().out


@pytest.fixture
def worker(tmp_path):
    address = str(tmp_path / "w.sock")
    process = subprocess.Popen([sys.executable, "-m", "peftir.worker", address, str(os.getpid())])
    deadline = time.time() + 120
    while not os.path.exists(address):
        assert process.poll() is None and time.time() < deadline, "worker did not start"
        time.sleep(0.1)
    yield address
    process.kill()
    process.wait()


def test_worker_runs_jobs_in_children_and_reports_their_status(worker, tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    assert submit(worker, "peftir.jobs.folding:make_folds", folds_job(good, QUERIES)) == 0
    assert (good / "folds.json").exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    assert submit(worker, "peftir.jobs.folding:make_folds", folds_job(bad, "")) == 1
    assert "Traceback" in (bad / "folds.log").read_text()
    assert submit(worker, "peftir.jobs.folding:make_folds", folds_job(good, QUERIES)) == 0   # still serving

"""Running a job's script: in its own process and through the warm worker, the same script and results."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peftir.provenance import records
from peftir.pipeline import warm

QUERIES = "".join(f"q{i}\ttext {i}\n" for i in range(9))
# A workflow script (BODY, registered with the worker as folds.py) as Snakemake runs it: its copy under
# .snakemake/scripts, a preamble that makes the `snakemake` object, then the script's text.
PREAMBLE = '''
from types import SimpleNamespace

class Named(dict):
    __getattr__ = dict.__getitem__

snakemake = SimpleNamespace(rule="folds", input=Named(queries="queries.tsv"), output=Named(folds="folds.json"),
                            params=Named(folds={"folds": {"scheme": "seeded", "n": 3, "seed": 1}}),
                            wildcards=Named(dataset="toy"), log=["folds.log"], threads=1,
                            resources=Named(mem_mb=1000))
'''
BODY = '''import sys
from peftir.pipeline import warm
from peftir.pipeline.job import job

with open("served.txt", "w") as handle:
    handle.write(str(warm.serving()))
with job(snakemake) as smk:
    from peftir.data.folds import assign_folds

    assign_folds(smk.wildcards.dataset, smk.params.folds, smk.input.queries, smk.output.folds)
    print("done", file=sys.stderr)
'''
SCRIPT = PREAMBLE + BODY


def _workdir(path: Path, queries: str = QUERIES) -> Path:
    (path / ".snakemake" / "scripts").mkdir(parents=True)
    (path / ".snakemake" / "scripts" / "tmp1.folds.py").write_text(SCRIPT)
    (path / "queries.tsv").write_text(queries)
    return path


def _run(workdir: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, ".snakemake/scripts/tmp1.folds.py"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """A worker owned by this test process (its scripts' processes descend from it)."""
    address = str(tmp_path_factory.mktemp("worker") / "w.sock")
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "folds.py").write_text(BODY)
    process = subprocess.Popen([sys.executable, "-m", "peftir.pipeline.warm", address, str(os.getpid()), str(scripts)])
    deadline = time.time() + 120
    while not os.path.exists(address):
        assert process.poll() is None and time.time() < deadline, "worker did not start"
        time.sleep(0.1)
    yield {**os.environ, warm.ADDRESS_ENV: address, warm.OWNER_ENV: str(os.getpid())}
    process.kill()
    process.wait()


def _plain_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in (warm.ADDRESS_ENV, warm.OWNER_ENV)}


def test_the_same_script_gives_the_same_outputs_and_records_with_and_without_the_worker(worker, tmp_path):
    alone, served = _workdir(tmp_path / "alone"), _workdir(tmp_path / "served")
    assert _run(alone, _plain_env()).returncode == 0
    assert _run(served, worker).returncode == 0
    assert (alone / "served.txt").read_text() == "False" and (served / "served.txt").read_text() == "True"
    assert (alone / "folds.json").read_bytes() == (served / "folds.json").read_bytes()
    assert "done" in (alone / "folds.log").read_text() and "done" in (served / "folds.log").read_text()
    assert "run by the warm worker" in (served / "folds.log").read_text()
    assert "run by the warm worker" not in (alone / "folds.log").read_text()
    made = [json.loads((d / records.record_path("folds.json")).read_text()) for d in (alone, served)]
    assert made[0]["outputs"] == made[1]["outputs"] and made[0]["params"] == made[1]["params"]


def test_a_failure_reaches_the_log_and_the_exit_status_both_ways(worker, tmp_path):
    for name, env in (("alone", _plain_env()), ("served", worker)):
        workdir = _workdir(tmp_path / name, queries="")            # no queries: no folds
        done = _run(workdir, env)
        assert done.returncode == 1
        assert "Traceback" in (workdir / "folds.log").read_text()
        assert "job failed; log: folds.log" in done.stderr          # the terminal gets the log's end
        assert not (workdir / "folds.json").exists() and not (workdir / "results").exists()


@pytest.mark.parametrize("name, text", [
    ("script.py", SCRIPT),                                    # not Snakemake's copy
    (".snakemake/scripts/tmp2.other.py", SCRIPT),             # not a script of the workflow
    (".snakemake/scripts/tmp2.folds.py", SCRIPT + "\nprint('and more')\n"),   # not the workflow's text
])
def test_the_worker_serves_only_copies_of_the_workflows_scripts(worker, tmp_path, name, text):
    workdir = _workdir(tmp_path / "elsewhere")
    (workdir / name).write_text(text)
    done = subprocess.run([sys.executable, name], cwd=workdir, env=worker, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and (workdir / "served.txt").read_text() == "False"   # refused: ran here


def test_a_process_outside_the_owners_tree_runs_its_job_itself(worker, tmp_path):
    workdir = _workdir(tmp_path / "stranger")
    assert _run(workdir, {**worker, warm.OWNER_ENV: "1"}).returncode == 0     # e.g. a job on a cluster node
    assert (workdir / "served.txt").read_text() == "False"


@pytest.mark.parametrize("setting, local_run, deployed, expected", [
    ("auto", True, False, True), ("auto", False, False, False), (True, False, False, True),
    (False, True, False, False), ("auto", True, True, False), (True, True, True, False)])
def test_when_a_worker_is_started(setting, local_run, deployed, expected):
    assert warm.wanted(setting, local_run, deployed) is expected


def test_the_workers_directory_goes_when_snakemake_is_killed(tmp_path):
    """SIGKILL skips Snakemake's exit hooks; the worker sees its owner gone and removes its directory."""
    (tmp_path / "folds.py").write_text(BODY)
    owner = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom peftir.pipeline import warm\n"
                              f"print(warm.start({str(tmp_path)!r}), flush=True)\ntime.sleep(300)"],
                             stdout=subprocess.PIPE, text=True)
    address = Path(owner.stdout.readline().strip())
    assert address.parent.name.startswith(warm.DIRECTORY_PREFIX)
    deadline = time.time() + 120
    while not address.exists():
        assert time.time() < deadline, "worker did not start"
        time.sleep(0.1)
    owner.kill()
    owner.wait()
    while address.parent.exists():
        assert time.time() < deadline + 30, f"{address.parent} left behind"
        time.sleep(0.1)


def test_a_module_that_fails_to_import_leaves_the_worker_serving(tmp_path, monkeypatch):
    """The worker imports a script's modules at its first job; a failing import is the job's to report (its child
    imports again, into the job's log), not a crash of the worker and every job it runs."""
    script = tmp_path / "folds.py"
    script.write_text(BODY)

    tried = []

    def broken(name):
        tried.append(name)
        raise ImportError(f"{name} is broken")

    monkeypatch.setattr(warm.importlib, "import_module", broken)
    prepared: set[str] = set()
    warm._prepare(script, prepared)
    assert tried and prepared == {"folds.py"}

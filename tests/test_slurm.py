"""`snakemake --profile slurm` on a real single-node SLURM: jobs run as SLURM jobs where the rules ask.

Needs root (to install slurm-wlm and munge and start their daemons). In CI it must run; elsewhere,
without root, it is skipped with the reason.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_cluster import Cluster, install, run_bounded

REPO = Path(__file__).resolve().parents[1]
TINY = """
experiment: {datasets: [vaswani], rankers: [twinbert], seeds: [1], metrics: [P@20, nDCG@20]}
tables: {table4: {methods: [full]}}
datasets: {vaswani: {folds: {scheme: seeded, n: 3, seed: 7}}}
backbone: {layers: 1}
training: {epochs: 1, pairs_per_epoch: 8, batch_size: 4, micro_batch: 4}
"""
TARGET = "results/tables/table4.tex"
TIME_LIMIT = 1200   # seconds for the SLURM run: interrupted (SIGINT), then killed
GPU_RULES, CPU_RULES = {"train", "rerank", "zero_shot"}, {"index", "bm25"}


def _needs_root() -> None:
    if os.geteuid() != 0:
        reason = "needs root to install slurm-wlm and munge and to start slurmctld, slurmd and munged"
        if os.environ.get("CI"):
            pytest.fail(f"the SLURM test must run in CI, but {reason}")
        pytest.skip(reason)


def _run_bounded(command: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """Run with a hard limit (``slurm_cluster.run_bounded``), so a hung status loop can never hang the test suite."""
    returncode, output, _, timed_out = run_bounded(command, cwd, env, timeout)
    if timed_out:
        pytest.fail(f"snakemake --profile slurm did not finish in {timeout} s:\n{output[-4000:]}")
    return subprocess.CompletedProcess(command, returncode, output, "")


def _snakemake(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", TARGET, *args, "--snakefile", str(REPO / "Snakefile"),
            "--directory", str(workdir), "--configfile", str(REPO / "config.yaml"), str(workdir / "tiny.yaml")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    _needs_root()
    install()
    started = Cluster(tmp_path_factory.mktemp("slurm")).start()
    yield started
    started.stop()


@pytest.mark.integration
def test_profile_slurm_runs_jobs_as_slurm_jobs_and_gives_the_local_table(cluster, irds_home, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "slurm"
    for workdir in (local, remote):
        workdir.mkdir()
        (workdir / "tiny.yaml").write_text(TINY)
    done = subprocess.run(_snakemake(local, "--cores", "2"), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]

    partitions = tmp_path / "partitions.yaml"      # the plugin's own partition file: GPU jobs to `gpu`
    partitions.write_text("partitions:\n  cpu: {max_gpu: 0}\n  gpu: {max_gpu: 2}\n")
    env = {**cluster.env, "SNAKEMAKE_SLURM_PARTITIONS": str(partitions)}
    # typed as a user types it, from the repository root; the test only adds where results go
    # and checks status more often than a real cluster should be polled
    done = _run_bounded(_snakemake(remote, "--profile", "slurm", "--slurm-init-seconds-before-status-checks", "1"),
                        REPO, env, TIME_LIMIT)
    assert done.returncode == 0, done.stdout[-6000:]

    records = [json.loads(p.read_text()) for p in (remote / "results/provenance").rglob("*.json")]
    jobs = cluster.completed_jobs()
    ran = {}
    for record in {r["file"]: r for r in records}.values():
        rule, job_id = record["rule"], record["slurm_job_id"]
        if rule in GPU_RULES | CPU_RULES:
            assert job_id in jobs, f"{rule} {record['wildcards']} has no SLURM completion record"
            ran[rule] = ran.get(rule, 0) + 1
            fields = jobs[job_id]
            assert fields["JobState"] == "COMPLETED"
            assert fields["Partition"] == ("gpu" if rule in GPU_RULES else "cpu")
            gpus = cluster.job(job_id).get("TresPerJob", "")
            assert (gpus == "gres:gpu:1") == (rule in GPU_RULES), (rule, gpus)
        else:
            assert job_id is None, f"{rule} is a local rule but ran as SLURM job {job_id}"
    # records per output: train writes weights + summary, bm25, zero_shot and rerank a run + its ir_metadata
    assert ran == {"index": 1, "bm25": 2 * 1, "zero_shot": 2 * 1, "train": 2 * 1 * 3, "rerank": 2 * 1 * 3}
    # each training alone; the three rerankings in one allocation (slurm/config.yaml bundles ten), which asks one
    # GPU (each holds the group's one slot: without it Snakemake would ask three) for the sum of their runtimes
    # (config.yaml: 3 × 30 minutes); 7 allocations for the 9 jobs
    allocations = {}
    for record in records:
        if record["rule"] in GPU_RULES | CPU_RULES:
            allocations.setdefault(record["slurm_job_id"], set()).add((record["rule"], record["wildcards"].get("fold")))
    assert len(allocations) == 7 and set(allocations) <= set(jobs), allocations
    bundled = [job_id for job_id, members in allocations.items() if len(members) > 1]
    assert len(bundled) == 1 and allocations[bundled[0]] == {("rerank", fold) for fold in ("1", "2", "3")}
    assert cluster.job(bundled[0])["TimeLimit"] == "01:30:00" and cluster.job(bundled[0])["TresPerJob"] == "gres:gpu:1"
    assert sum(members == {("train", fold)} for members in allocations.values() for fold in ("1", "2", "3")) == 3
    assert {record["host"] for record in records} == {cluster.hostname}
    assert (remote / TARGET).read_bytes() == (local / TARGET).read_bytes()
    table = json.loads((remote / "results/tables/table4.json").read_text())
    assert [c["row"] for c in table if c["row_kind"] == "method" and c["metric"] == "P@20"] == ["full"]

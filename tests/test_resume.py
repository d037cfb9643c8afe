"""A training job killed with SIGKILL mid-run resumes from its checkpoint and ends with a byte-identical run file.

A workflow of its own (a job killed in the middle): in its own file, so that ``make test`` runs it beside the long
build of ``test_workflow.py`` rather than after it on the same worker."""
import os
import signal
import subprocess
import time

import pytest
import torch

from test_workflow import command_line, snakemake

RESUME = """
experiment: {datasets: [vaswani], rankers: [twinbert], seeds: [1]}
datasets: {vaswani: {folds: {scheme: seeded, n: 3, seed: 7}}}
backbone: {layers: 1}
ranker: {max_doc_len: 16}
training: {epochs: 5, pairs_per_epoch: 32, batch_size: 8, micro_batch: 8}
"""


@pytest.mark.integration
def test_a_training_job_killed_mid_run_resumes_and_ends_with_the_same_run_file(irds_home, tmp_path):
    (tmp_path / "tiny.yaml").write_text(RESUME)
    target = "results/runs/vaswani/twinbert/lora/fold2-seed1.run"
    weights = tmp_path / "results/models/vaswani/twinbert/lora/fold2-seed1.pt"
    checkpoint = weights.with_suffix(".ckpt")
    assert snakemake(tmp_path, target, "--cores", "1").returncode == 0
    uninterrupted = (tmp_path / target).read_bytes()
    assert not checkpoint.exists()                         # removed once the job completed

    (tmp_path / target).unlink()                           # as on a first run: neither run nor weights yet
    weights.unlink()
    command = command_line(tmp_path, target, "--cores", "1")
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True) as killed:
        deadline = time.time() + 300
        while not checkpoint.exists() and killed.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        os.killpg(killed.pid, signal.SIGKILL)
    epoch = torch.load(checkpoint, weights_only=False)["epoch"]
    assert 1 <= epoch < 5                                  # killed mid-run, after a completed epoch
    assert not weights.exists()                            # nothing that looks complete was left

    assert snakemake(tmp_path, target, "--unlock").returncode == 0     # the killed run's lock, as a user would
    result = snakemake(tmp_path, target, "--cores", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    log = (tmp_path / "results/logs/train/vaswani/twinbert/lora/fold2-seed1.log").read_text()
    assert f"resumed from the checkpoint of epoch {epoch}" in log
    assert [line.split(":")[0] for line in log.splitlines() if line.startswith("epoch ") and "loss" in line][-1] \
        == "epoch 5"
    assert (tmp_path / target).read_bytes() == uninterrupted
    assert not checkpoint.exists()

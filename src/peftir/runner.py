"""How a workflow script runs its job: in a warm worker when one serves this host, else in-process.

Importing torch and transformers costs about 5 s per process on the laptop
path, which dominates a DAG of hundreds of small jobs. ``peftir.worker`` keeps
one process with those imports done and forks a child per job; this module is
the client side and imports only the standard library, so a job's own
start-up stays small. Both paths call the same job function with the same
``Job``, and on a cluster (no worker) every job simply runs in-process.
"""
from __future__ import annotations

import importlib
import json
import os
import socket
import sys
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from . import provenance

WORKER_ENV = "PEFTIR_WORKER"


@dataclass
class Job:
    """What a job function gets: the Snakemake job's files, params and wildcards as plain data."""

    rule: str
    input: dict[str, str | list[str]]
    output: dict[str, str]
    params: dict = field(default_factory=dict)
    wildcards: dict[str, str] = field(default_factory=dict)
    log: str | None = None
    threads: int = 1
    source: str = "."   # the workflow's repository (for the git commit in provenance records)


def _named(items) -> dict:
    """Snakemake's named lists → plain dict (the workflow names every input and output)."""
    return {key: (list(value) if isinstance(value, list) else str(value)) for key, value in items.items()}


def from_snakemake(smk) -> Job:
    return Job(rule=smk.rule, input=_named(smk.input), output=_named(smk.output),
               params=dict(smk.params.items()), wildcards=dict(smk.wildcards.items()),
               log=smk.log[0] if smk.log else None, threads=smk.threads,
               source=str(Path(smk.scriptdir).resolve().parents[1]))


@contextmanager
def _output_to(log: str | None) -> Iterator[None]:
    """Send this process's output (Python streams and file descriptors 1/2, for child processes
    such as Java) to the job's log, appending; restore both afterwards."""
    if not log:
        yield
        return
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    sys.stdout.flush(), sys.stderr.flush()
    saved_fds, saved_streams = (os.dup(1), os.dup(2)), (sys.stdout, sys.stderr)
    with open(log, "a", buffering=1) as stream:
        os.dup2(stream.fileno(), 1)
        os.dup2(stream.fileno(), 2)
        sys.stdout = sys.stderr = stream
        try:
            yield
        finally:
            stream.flush()
            sys.stdout, sys.stderr = saved_streams
            for fd, saved in zip((1, 2), saved_fds):
                os.dup2(saved, fd)
                os.close(saved)


def execute(entry: str, job: Job) -> int:
    """Run ``module:function`` on ``job`` in this process, its output appended to the job's log.

    Returns the exit status; the error (message or traceback) goes to the log.
    """
    module, function = entry.split(":")
    with _output_to(job.log):
        try:
            getattr(importlib.import_module(module), function)(job)
            return 0
        except SystemExit as stop:  # sys.exit(message) is how a job reports an expected failure
            if stop.code is None or isinstance(stop.code, int):
                return stop.code or 0
            print(stop.code, file=sys.stderr)
            return 1
        except Exception:
            traceback.print_exc()
            return 1


def submit(address: str, entry: str, job: Job) -> int:
    """Ask the worker at ``address`` to run the job; returns its exit status."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(address)
        conn.sendall(json.dumps({"entry": entry, "job": asdict(job), "cwd": os.getcwd()}).encode() + b"\n")
        reply = conn.makefile().readline()
    if not reply:
        raise RuntimeError("the warm worker closed the connection without an exit status")
    return int(json.loads(reply)["status"])


def _log_tail(path: str | None, lines: int = 3) -> str:
    """The end of a failed job's log, so the terminal shows why without opening the file."""
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as handle:
        return "".join(handle.readlines()[-lines:])


def run(entry: str, smk) -> None:
    """Entry point for workflow scripts: ``run("peftir.jobs.ranking:train", snakemake)``.

    Once the job has written its outputs, a provenance record of each is written (``peftir.provenance``).
    """
    job = from_snakemake(smk)
    started = provenance.now()
    address = os.environ.get(WORKER_ENV)
    status = None
    if address and os.path.exists(address):
        try:
            status = submit(address, entry, job)
        except (ConnectionRefusedError, FileNotFoundError):
            status = None  # worker gone (e.g. a stale address): fall back to running here
    if status is None:
        status = execute(entry, job)
    if status:
        sys.exit(f"{_log_tail(job.log)}job failed (status {status}); log: {job.log}")
    provenance.write_records(provenance.job_record(job.rule, job.wildcards, job.params, job.input, job.output,
                                                   job.source, started, provenance.now()))

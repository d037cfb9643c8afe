"""How a workflow script runs its job: ``with job(snakemake) as smk:`` around one package call.

Every script in ``workflow/scripts/`` is named after its rule and reads::

    with job(snakemake) as smk:
        from peftir.<concern>.<module> import <function>
        <function>(smk.input..., smk.params..., smk.output...)

The context does what every job needs and no job computes:

1. it lets the warm worker run the script when one serves this run (``peftir.pipeline.warm``):
   the worker's child executes this same script, with the imports already paid, and this process
   exits with its status; otherwise, and in that child, it goes on here;
2. it sends the job's output (Python's streams and file descriptors 1 and 2, so a Java child's
   output too) to the rule's log, and reports a failure there: an ``ActionableError``'s message,
   or any other error's traceback, then the log's last lines on the terminal;
3. once the body succeeded, it writes a provenance record of each output (``peftir.provenance``), with the facts
   the body ``noted`` (what a job counted of its data: documents exported, indexed, empty);
4. it publishes the rule's ``mem_mb`` to the Java processes the job starts (``peftir.execution.memory``);
5. with ``PEFTIR_SEAM_AUDIT`` set (tests), it records what entered the job's models and from where
   (``peftir.execution.audit``);
6. it hands a run-writing job's ``significance`` param (the test and correction its runs are evaluated with) to the
   runs' ir_metadata sidecars (``peftir.provenance.ir_metadata.set_significance``).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import traceback
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from ..errors import ActionableError
from ..execution import audit, memory
from . import warm
from .bundles import recorded_params


_NOTED: dict[str, Any] = {}     # the running job's facts for its records (one job a process at a time)


def noted(facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """Keep ``facts`` (JSON values: what the job counted of its data) for the provenance records of its outputs, so
    a reader of the record sees them without opening the log; returns them, for the log too."""
    _NOTED.update(facts)
    return facts


def _named(items: Any) -> dict[str, str | list[str]]:
    """Snakemake's named lists → plain dict (the workflow names every input and output)."""
    return {key: (list(map(str, value)) if isinstance(value, list) else str(value)) for key, value in items.items()}


@contextmanager
def _output_to(log: str | None) -> Iterator[None]:
    """Append this process's output (Python streams and descriptors 1/2) to ``log``; restore both after."""
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


def _log_tail(path: str | None, lines: int = 3) -> str:
    """The end of a failed job's log, so the terminal shows why without opening the file."""
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as handle:
        return "".join(handle.readlines()[-lines:])


@contextmanager
def job(smk: Any) -> Iterator[Any]:
    """Run the body as the job of Snakemake's ``smk`` object (see the module's docstring)."""
    warm.run_in_worker()          # returns only where this process is to run the job itself
    from ..provenance import records   # not before: a process that hands its job over stays light
    from ..provenance.ir_metadata import set_significance

    started = records.now()
    _NOTED.clear()
    log = str(smk.log[0]) if smk.log else None
    failed = False
    audited = audit.job_directory()
    memory.publish(getattr(smk.resources, "mem_mb", None))
    set_significance(smk.params.get("significance"))
    with _output_to(log):
        if warm.serving():
            print(f"run by the warm worker (process {os.getpid()}, imports already loaded)", file=sys.stderr)
        if audited:
            audit.start(smk.rule)
        try:
            yield smk
        except ActionableError as error:
            print(error, file=sys.stderr)
            failed = True
        except Exception:
            traceback.print_exc()
            failed = True
        finally:
            if audited:
                try:
                    audit.write(audit.stop(), audited)
                except OSError:         # the audit was asked for: a job whose record is lost fails, with its log
                    traceback.print_exc()
                    failed = True
    if failed:
        sys.exit(f"{_log_tail(log)}job failed; log: {log}")
    records.write_records(records.job_record(smk.rule, dict(smk.wildcards.items()), recorded_params(smk.params),
                                             _named(smk.input), _named(smk.output), started, records.now(),
                                             facts=dict(_NOTED)))


def job_key(smk: Any) -> str:
    """What identifies this job's work: rule, params, wildcards and each input's size and modification
    time. A training checkpoint carries it, so only the job that wrote one resumes from it."""
    from ..provenance.records import files_by_name

    inputs = {name: [(path, os.stat(path).st_size, os.stat(path).st_mtime_ns) for path in paths]
              for name, paths in sorted(files_by_name(_named(smk.input)).items())}
    key = [smk.rule, dict(smk.params.items()), dict(smk.wildcards.items()), inputs]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()

"""How far a long job is, in its log: a line when a stage starts, then one every ``PEFTIR_PROGRESS_SECONDS`` (60 by
default) with the count done, the rate, the time left and the clock time the stage should end, and one when it ends.

A job's log is a file (on a cluster, tailed by its user), not a terminal: whole lines, not a redrawn bar, at an
interval that keeps an hours-long job's log short. tqdm formats the meter (``tqdm.format_meter``); this module only
decides when to write it. (The workflow sets ``TQDM_DISABLE`` for its jobs, so the bars of tqdm that libraries and
older code draw do not fill the logs with carriage returns: ``workflow/rules/common.smk``.)

Call sites are statements of their own, keyed by what they count::

    from .. import progress_log
    progress_log.start("encoding the corpus", len(texts), "passages")
    for batch in batches:
        ...
        progress_log.advance("encoding the corpus", len(batch))
    progress_log.finish("encoding the corpus")

so that, like ``print`` and ``log.info``, they are left out of a job's code version
(``peftir.provenance.code_version``: this module is infrastructure, and its import and ``progress_log.*(...)``
statements are dropped before hashing): adding or changing them reruns no job. They read only what the job has in
hand, never a tensor's value (no device synchronisation), and never fail the job: a total that cannot be had is
left unknown.
"""
from __future__ import annotations

import datetime
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

from tqdm import tqdm

INTERVAL_ENV = "PEFTIR_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 60.0


@dataclass
class _Stage:
    total: float | None
    unit: str
    interval: float                  # seconds between lines, read once when the stage starts
    started: float
    last_written: float
    done: float = 0


_STAGES: dict[str, _Stage] = {}


def _interval() -> float:
    """Seconds between lines: ``PEFTIR_PROGRESS_SECONDS``, or the default where it is unset or not a number."""
    try:
        return float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL))
    except ValueError:
        return DEFAULT_INTERVAL


def line(what: str, done: float, total: float | None, elapsed: float, unit: str,
         now: datetime.datetime | None = None) -> str:
    """The meter of a stage: done of total, percentage, rate, elapsed and left, and when it should end (UTC)."""
    if total:
        shape = "{desc}: {n_fmt}/{total_fmt}{unit} ({percentage:.0f} %), {rate_fmt}, {elapsed} elapsed, {remaining} left"
    else:
        shape = "{desc}: {n_fmt}{unit}, {rate_fmt}, {elapsed} elapsed"
    meter = " ".join(tqdm.format_meter(done, total, elapsed, prefix=what, unit=f" {unit}", bar_format=shape).split())
    if total and 0 < done < total:
        ends = (now or datetime.datetime.now(datetime.timezone.utc)) + datetime.timedelta(
            seconds=elapsed * (total - done) / done)
        meter += f", ends about {ends:%Y-%m-%d %H:%M} UTC"
    return f"[progress] {meter}"


def _write(what: str, stage: _Stage, now: float) -> None:
    print(line(what, stage.done, stage.total, now - stage.started, stage.unit), file=sys.stderr, flush=True)
    stage.last_written = now


def _known(total: float | Callable[[], float | None] | None) -> float | None:
    """A total, or what a function gives (ir_datasets' document count, from its metadata); None if it fails."""
    if callable(total):
        try:
            total = total()
        except Exception:          # a count that cannot be had: the stage is shown without a total
            return None
    return total or None


def lines_of(path: str | os.PathLike) -> Callable[[], int]:
    """A total read when the stage starts: the lines of ``path`` (a corpus file's documents, one a line)."""
    def count() -> int:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    return count


def start(what: str, total: float | Callable[[], float | None] | None, unit: str = "items") -> None:
    """A stage begins: ``total`` items of ``unit``, or a function giving it (None: count and rate only)."""
    now = time.monotonic()
    _STAGES[what] = stage = _Stage(_known(total), unit, _interval(), now, now)
    _write(what, stage, now)


def advance(what: str, done: float = 1) -> None:
    """``done`` more items of the stage ``what``; a line when the stage's interval has passed since the last (called
    per document or step, so it reads no environment and formats nothing otherwise)."""
    if what not in _STAGES:            # never started: counted from here, without a total
        start(what, None)
    stage = _STAGES[what]
    stage.done += done
    now = time.monotonic()
    if now - stage.last_written >= stage.interval:
        _write(what, stage, now)


def finish(what: str) -> None:
    """The stage ``what`` is over: its last line (what it counted, in how long, at what rate)."""
    stage = _STAGES.pop(what, None)
    if stage is not None:
        _write(what, stage, time.monotonic())

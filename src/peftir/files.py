"""Writing outputs so that an interrupted job never leaves one that looks complete.

Every output is written to a temporary file beside its final path and renamed over it only once
complete; Snakemake (and any reader) sees either the old file, no file, or the whole new one.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def plain_mode(mode: int) -> int:
    """The permissions a plain open()/mkdir() would give under the current umask."""
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


def _own_temporary(path: Path) -> re.Pattern:
    """The names ``tempfile`` gives the temporaries of ``path`` (``.<name>.<8 random characters>.part``), and no
    other: ``.x.*.part`` would also match a concurrent job's ``.x.y.<random>.part`` for a dataset named ``x.y``."""
    return re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.part")


def remove_leftovers(path: str | os.PathLike) -> None:
    """Temporary files or directories a killed job left beside ``path`` (``.<name>.<random>.part``), which
    no reader takes for an output: the job's rerun removes them before writing its own."""
    path = Path(path)
    own = _own_temporary(path)
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.part"):
        if not own.fullmatch(leftover.name):
            continue
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that needs a file name (a database), renamed over
    ``path`` only when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    os.chmod(tmp, plain_mode(0o666))  # mkstemp's 0600 would make results unreadable to collaborators
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path`` and rename it over ``path`` only on success."""
    with atomic_path(path) as tmp:
        with open(tmp, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())


def write_json(path: str | os.PathLike, document: object) -> None:
    """A job's JSON summary, indented, written atomically."""
    with atomic_write(path) as handle:
        json.dump(document, handle, indent=1, ensure_ascii=False, allow_nan=False)
        handle.write("\n")


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary directory beside ``path`` for a writer that fills a directory (a checkpoint, an index),
    put in place of ``path`` only when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    building = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part"))
    try:
        yield building
        building.chmod(plain_mode(0o777))  # mkdtemp's 0700 would hide the directory from a group
        if path.exists():
            shutil.rmtree(path)
        os.replace(building, path)
    finally:
        shutil.rmtree(building, ignore_errors=True)


@contextmanager
def scratch_directory(beside: str | os.PathLike) -> Iterator[Path]:
    """A job's working space beside its output ``beside`` (``.<name>.scratch``: under ``results/`` like the output,
    on the disk it is written to), emptied first (a killed job's leftovers) and removed when the block ends."""
    beside = Path(beside)
    path = beside.parent / f".{beside.name}.scratch"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)

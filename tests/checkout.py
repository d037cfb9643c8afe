"""Clones of this repository for tests that need the workflow somewhere else (a moved copy, a reviewer)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def clone(target: Path) -> Path:
    """A clone of the repository's commit at ``target`` holding the working tree's files (tracked and new, not
    ignored; the deleted ones gone): what a user's clone holds, uncommitted changes included when there are some,
    new files staged (a crate of uncommitted work packs tracked files and refuses untracked ones)."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(target)], check=True)
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for path in filter(None, listed):
        if (REPO / path).is_file():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, target / path)
    deleted = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--deleted"], capture_output=True,
                             check=True).stdout.decode().split("\0")
    for path in filter(None, deleted):          # a file the working tree removed is not in a user's clone either
        (target / path).unlink(missing_ok=True)
    subprocess.run(["git", "-C", str(target), "add", "--all"], check=True)
    return target


def uncommitted() -> bool:
    """Whether this repository's tracked files differ from its commit: a crate built from its clone is then made
    from uncommitted changes, and a reviewer audits it with ``--unpublished``."""
    return bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout)

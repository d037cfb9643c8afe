"""Shared fixtures: an offline ir_datasets home holding the cached vaswani files."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_IRDS = Path(os.environ.get("PEFTIR_IRDS_CACHE", REPO.parent / "shared" / "irds"))


@pytest.fixture(scope="session")
def irds_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable IR_DATASETS_HOME with vaswani, so ir_datasets works with no network."""
    if not (SHARED_IRDS / "vaswani" / "docs.txt").exists():
        pytest.fail(f"cached ir_datasets files not found at {SHARED_IRDS}; set PEFTIR_IRDS_CACHE")
    home = tmp_path_factory.mktemp("irds")
    shutil.copytree(SHARED_IRDS / "vaswani", home / "vaswani")
    previous = os.environ.get("IR_DATASETS_HOME")
    os.environ["IR_DATASETS_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("IR_DATASETS_HOME", None)
    else:
        os.environ["IR_DATASETS_HOME"] = previous

"""ir_metadata (Breuer et al., SIGIR 2022) of a run, as a YAML file beside it.

trec_eval rejects comment lines in a run, so the metadata is a sidecar (``<run>.ir_metadata.yaml``,
an output of the same job, named with the run in its provenance record). Only what is the same for
every rerun of the same job goes in (no host, no time), so a rerun with the same seed writes
byte-identical files.
"""
from __future__ import annotations

import os

import yaml

from ..files import atomic_write
from .records import git_state, versions, workflow_checkout


def ir_metadata(tag: str, method: dict, data: dict) -> dict:
    """A run's metadata: its tag, software versions, the checkout's commit, the method and the data."""
    git = git_state(workflow_checkout())
    return {
        "tag": tag,
        "platform": {"software": {"libraries": {name: v for name, v in sorted(versions().items()) if v}}},
        "implementation": {"source": {"lang": "python", "repository": "PEFT-IR Repro",
                                      "commit": git["commit"], "dirty": git["dirty"]}},
        "method": method,
        "data": {"test collection": data},
    }


def write_ir_metadata(path: str | os.PathLike, metadata: dict) -> None:
    with atomic_write(path) as handle:
        yaml.safe_dump(metadata, handle, sort_keys=False, allow_unicode=True)

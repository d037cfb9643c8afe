"""ir_metadata (Breuer et al., SIGIR 2022) of a run, as a YAML file beside it.

trec_eval rejects comment lines in a run, so the metadata is a sidecar (``<run>.ir_metadata.yaml``,
an output of the same job, named with the run in its provenance record). Only what is the same for
every rerun of the same job goes in (no host, no time), so a rerun with the same seed writes
byte-identical files. The evaluation a run is made for (research goal → evaluation → significance test: the test
and its multiple-comparison correction, the config's ``significance``) is the same for every run of a job: the job
context hands it over once (``set_significance``, from the job's ``significance`` param).
"""
from __future__ import annotations

import os

import yaml

from ..files import atomic_write
from .records import git_state, versions, workflow_checkout


_SIGNIFICANCE: dict | None = None     # the job's significance settings (``set_significance``)
TESTS = {"t": "Student's paired t-test on per-query scores, on the queries both runs score",
         "permutation": "paired randomisation test (sign flips) on per-query scores, on the queries both runs score"}


def set_significance(settings: dict | None) -> None:
    """The significance test and correction the runs of this job are evaluated with (None: not said)."""
    global _SIGNIFICANCE
    _SIGNIFICANCE = None if settings is None else dict(settings)


def research_goal() -> dict:
    """ir_metadata's research goal → evaluation → significance test, from the job's settings; empty if none."""
    if _SIGNIFICANCE is None:
        return {}
    test = {"name": TESTS[_SIGNIFICANCE["test"]], "correction method": _SIGNIFICANCE["correction"],
            "alpha": _SIGNIFICANCE["alpha"], "permutations": _SIGNIFICANCE["permutations"],
            "seed": _SIGNIFICANCE["seed"]}
    return {"research goal": {"evaluation": {"significance test": [test]}}}


def ir_metadata(tag: str, method: dict, data: dict) -> dict:
    """A run's metadata: its tag, the evaluation it is made for, software versions, the checkout's commit, the
    method and the data."""
    git = git_state(workflow_checkout())
    return {
        **research_goal(),
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

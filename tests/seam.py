"""Workflows run with the execution seam audited (``peftir.execution.audit``), and the check of what they recorded:
every job that trains, encodes, scores or searches put its models and batches through ``Execution``."""
from __future__ import annotations

import json
from pathlib import Path

from peftir.execution.audit import AUDIT_ENV

RECORDS = ".seam-audit"        # in the test's working directory, beside results/


def audited(workdir: Path) -> dict[str, str]:
    """The environment that makes every job of a run in ``workdir`` write its record."""
    return {AUDIT_ENV: str(workdir / RECORDS)}


def check_the_seam(workdir: Path, kinds: set[str]) -> None:
    """No job of the run called a model that was not placed or fed it a batch the seam did not hand out, and each
    job kind of ``kinds`` ran at least one placed model."""
    records = [json.loads(path.read_text()) for path in sorted((workdir / RECORDS).glob("*.json"))]
    assert records, f"no job wrote a seam record under {workdir / RECORDS}"
    violations = {record["job"]: record["violations"] for record in records if record["violation_count"]}
    assert not violations, f"jobs went around the execution seam: {violations}"
    ran = {record["job"] for record in records if record["models"] and record["calls"]}
    assert kinds <= ran, f"job kinds that ran no placed model: {sorted(kinds - ran)}"

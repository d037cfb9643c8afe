"""`make lint`'s two checks, run by `make test` too so CI keeps them: Snakemake's own linter over the workflow (every
rule with a log, no absolute paths, params not read from the config in scripts …) and snakefmt's formatting of the
Snakefile and the rules files (pyproject.toml's [tool.snakefmt])."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_snakemake_lint_finds_nothing(tmp_path: Path) -> None:
    env = dict(os.environ, IR_DATASETS_HOME=str(tmp_path / "irds"))     # the config check reads metadata only
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint", "--cores", "1"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def test_snakefmt_leaves_the_workflow_unchanged() -> None:
    rules = sorted(str(path) for path in (REPO / "workflow" / "rules").glob("*.smk"))
    result = subprocess.run([str(BIN / "snakefmt"), "--check", str(REPO / "Snakefile"), *rules], cwd=REPO,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

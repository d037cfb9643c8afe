"""What an allocation spends before its jobs do useful work, measured on this machine's CPU.

    .venv/bin/python benchmarks/startup.py            # prints the figures
    .venv/bin/python benchmarks/startup.py --write    # also puts them in benchmarks/calibration.json (`startup`)

On a cluster each allocation starts Snakemake again (it parses the workflow, validates the config and builds the DAG
of the jobs it was given), and each job in it starts a Python process that imports torch, transformers and the
package, then reads its backbone's weights. ``peftir plan`` adds these seconds to the GPU-hours of every allocation
that holds a GPU (``peftir.pipeline.cost.Startup``), so that one allocation per job and one per training run can be
compared. Three figures, best of ``--repeat`` runs each:

- ``snakemake_s``: ``snakemake --list-rules`` on the embedded default (the workflow parsed, the config validated);
- ``job_s``: a Python process importing what a reranking job imports (torch, transformers, the package's
  reranking and provenance modules);
- ``load_gb_per_s``: the embedded MiniLM loaded with ``from_pretrained``, its fp32 weight bytes over the seconds
  (the plan scales a job's load by its backbone's bytes).

A cluster node's file system and CPU differ from this machine's; the figures say where they were taken.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from peftir.files import atomic_write

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "benchmarks" / "calibration.json"
JOB_IMPORTS = "import torch, transformers, peftir.semi_siamese.rerank, peftir.provenance.records"


def _best_of(repeat: int, command: list[str]) -> float:
    """The shortest wall time of ``command`` over ``repeat`` runs (the first may pay a cold file cache)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times)


def _load_rate(repeat: int) -> float:
    """GB of fp32 weights a second, loading the embedded backbone as a job loads its backbone."""
    from transformers import AutoModel

    from peftir.contract.backbones import EMBEDDED, resolve

    path = resolve(EMBEDDED)
    rates = []
    for _ in range(repeat):
        started = time.perf_counter()
        model = AutoModel.from_pretrained(path)
        seconds = time.perf_counter() - started
        rates.append(4 * sum(p.numel() for p in model.parameters()) / seconds / 1e9)
    return max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="put the figures in benchmarks/calibration.json")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    figures = {
        "snakemake_s": round(_best_of(args.repeat, [sys.executable, "-m", "snakemake", "--list-rules"]), 1),
        "job_s": round(_best_of(args.repeat, [sys.executable, "-c", JOB_IMPORTS]), 1),
        "load_gb_per_s": round(_load_rate(args.repeat), 3),
        "source": f"measured on this CPU ({platform.processor() or platform.machine()}, "
                  f"{datetime.date.today().isoformat()}, commit {commit}, benchmarks/startup.py)",
    }
    print(json.dumps(figures, indent=1))
    if args.write:
        table = json.loads(CALIBRATION.read_text())
        table["startup"] = figures
        with atomic_write(CALIBRATION) as handle:
            handle.write(json.dumps(table, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

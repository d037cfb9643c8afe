"""A job's memory budget (its rule's ``resources.mem_mb``), passed on to the Java processes the job starts.

The Python side of every job bounds its own memory (the data paths stream; see the memory benchmarks). A JVM
instead sizes its heap from the machine — a quarter of it, 128 GB on a 512 GB node — and a long Anserini search
grows into it, far beyond what the job asked SLURM for. So the job publishes its budget (``publish``, called by
``peftir.pipeline.job``) and Anserini's JVM takes ``JAVA_SHARE`` of it as its maximum heap (``java_heap_mb``),
leaving the rest to the job's Python process.
"""
from __future__ import annotations

import os

MEMORY_ENV = "PEFTIR_JOB_MEM_MB"
JAVA_SHARE = 0.5


def publish(mem_mb: int | None) -> None:
    """Make this job's memory budget known to the processes it starts (nothing when the rule declares none)."""
    if mem_mb:
        os.environ[MEMORY_ENV] = str(int(mem_mb))


def java_heap_mb() -> int | None:
    """The largest heap a JVM of this job may take, in MB; None outside a job with a budget (the JVM's default)."""
    budget = os.environ.get(MEMORY_ENV)
    return max(64, int(int(budget) * JAVA_SHARE)) if budget else None

"""PEFT-IR Repro: reusable code behind the Snakemake workflow.

Each module has one job (data export, folds, BM25, rankers, PEFT methods,
training, evaluation, statistics, tables); the workflow's scripts only read
the ``snakemake`` object and call into these modules.
"""

__version__ = "0.1.0"

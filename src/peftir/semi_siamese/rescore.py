"""Rescoring a Semi-Siamese reranking (rule ``rerank``) for ``peftir audit --rescore N``: the BM25 candidates of N
of the fold's test queries (a sample fixed by the run's path) scored again with the kept weights and the settings
the job recorded, by the code the job ran (``peftir.semi_siamese.rerank.score_test_fold``); every score must be the
run file's. No job imports this module."""
from __future__ import annotations

import random

from ..models.inputs import Collection
from ..retrieval.rescored import Rescored, precision_ran
from .rerank import score_test_fold


def rescore_reranking(run_path: str, record: dict, queries: int) -> Rescored:
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    params, wildcards = record["params"], record["wildcards"]
    picker = random.Random(run_path)
    rescored, used = score_test_fold(
        Collection.of(inputs), inputs["candidates"],
        wildcards["fold"], int(wildcards["seed"]), wildcards["ranker"], params["backbone"], params["ranker"],
        params["method"], params["training"], params["rerank"], params["execution"], 1, inputs["weights"],
        sample=lambda test: picker.sample(sorted(test), min(queries, len(test))))
    return Rescored(rescored, ran=precision_ran(record), used=used["precision"])

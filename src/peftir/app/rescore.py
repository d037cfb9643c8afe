"""Re-deriving a run file from its weights: ``peftir audit --rescore N``.

Hashes show that nothing changed after a job wrote its outputs; they cannot show that a run file
was ever computed from the weights its record names (a forged run with every hash recomputed
passes them). Rescoring loads the kept weights with the settings the rerank job recorded, scores
the BM25 candidates of N of the fold's test queries (a sample fixed by the run's path) with the
same code the job ran (``peftir.semi_siamese.rerank.score_test_fold``) and compares every score with
the run file's.
"""
from __future__ import annotations

import math
import random
from pathlib import Path

import yaml

from ..data.trec import read_run

# Scores are recomputed in other batches than the job's (fewer queries, so other padding): float32
# sums agree to about 1e-6 relative; a changed score, or one from other weights, differs far more.
TOLERANCE = 1e-4
# A run scored with a bf16 encoder (a GPU) and rescored in fp32 (a CPU), or the reverse, differs by
# bf16's rounding (8 bits of mantissa in the encoder's products); measured: see README, "Mixed precision".
ACROSS_PRECISIONS = 5e-2


def rescore(run_path: str, record: dict, queries: int) -> str | None:
    """Why the run file ``run_path`` (made by ``record``, a rerank job's) is not what its weights give on
    ``queries`` sampled test queries, or None when every score agrees within ``TOLERANCE``."""
    from ..models.inputs import Collection
    from ..semi_siamese.rerank import score_test_fold

    stored = read_run(run_path)
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items()}
    params, wildcards = record["params"], record["wildcards"]
    metadata = yaml.safe_load(Path(next(iter(record["outputs"]["metadata"]))).read_text())
    picker = random.Random(run_path)
    rescored, used = score_test_fold(
        Collection.of(inputs), inputs["candidates"],
        wildcards["fold"], int(wildcards["seed"]), wildcards["ranker"], params["backbone"], params["ranker"],
        params["method"], params["training"], params["rerank"], params["execution"], 1, inputs["weights"],
        sample=lambda test: picker.sample(sorted(test), min(queries, len(test))))
    was = metadata["method"]["execution"]["precision"]
    tolerance = TOLERANCE if used["precision"] == was else ACROSS_PRECISIONS
    for qid, docs in sorted(rescored.items()):
        if set(docs) != set(stored.get(qid, {})):
            return f"query {qid}: the weights rank other documents than the run file holds"
        for docid, score in sorted(docs.items()):
            if not math.isclose(score, stored[qid][docid], rel_tol=tolerance, abs_tol=tolerance):
                return (f"query {qid}, document {docid}: the run file says {stored[qid][docid]!r} ({was}), "
                        f"its weights {inputs['weights']} give {score!r} ({used['precision']} here)")
    return None

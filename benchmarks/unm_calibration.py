"""UNM's denoiser: how many candidates per query its calibrated reranker puts at or above the threshold, with the
calibration fitted on every scored candidate (the code before) and on RocketQA's class mix (each judged positive and
``calibration_negatives`` non-relevant candidates drawn for it: ``peftir.dense.negative_mining.balanced``).

    .venv/bin/python benchmarks/unm_calibration.py results/dense/negatives/<...>/fold1-seed1.run [--negatives 4 1]

    .venv/bin/python benchmarks/unm_calibration.py --simulate

Reads a finished ``mine_negatives`` job of the denoised pool (its provenance record names the collection, the BM25
and first-round runs, the reranker's weights and the mining settings), scores every training query's candidates
(the top ``depth`` of both runs and its judged relevant documents) once with the job's reranker, fits each
calibration on the job's calibration queries, and counts per training query the candidates at or above the
threshold (those the denoiser keeps out of the pool) and the judged relevant ones among them. Writes
``results/benchmarks/unm_calibration.json`` (one entry per mining output).

``--simulate`` shows the mechanism on an MS MARCO-shaped pool where no trained cross-encoder is at hand: per query
400 candidates (two runs' top 200), one judged relevant, a few unjudged relevant ones (false negatives; Poisson, mean
3), the rest not relevant; a cross-encoder's logit drawn N(3, 1.5) for a relevant candidate and N(−1, 1.5) for
another (seeded). Both calibrations are fitted on 500 queries; the counts per query at or above the threshold are
split into the false negatives caught and the non-relevant removed. Synthetic, labelled so in the output.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from statistics import fmean, median

from scipy.special import expit

from peftir.data import trec
from peftir.data.run_index import RunIndex
from peftir.dense import negative_mining as unm
from peftir.models.inputs import Collection
from peftir.provenance.records import read_record

OUTPUT = Path("results/benchmarks/unm_calibration.json")


def counts(probabilities: dict[str, dict[str, float]], qrels: trec.Qrels, threshold: float) -> dict:
    """Per-query candidates at or above ``threshold`` (mean, median, max) and the judged relevant ones among them."""
    above = {qid: [doc for doc, p in docs.items() if p >= threshold] for qid, docs in probabilities.items()}
    per_query = [len(docs) for docs in above.values()]
    relevant = sum(1 for qid, docs in above.items() for doc in docs if qrels.get(qid, {}).get(doc, 0) > 0)
    return {"per_query_mean": round(fmean(per_query), 2), "per_query_median": median(per_query),
            "per_query_max": max(per_query), "relevant_at_or_above": relevant,
            "relevant_scored": sum(1 for qid, docs in probabilities.items() for doc in docs
                                   if qrels.get(qid, {}).get(doc, 0) > 0)}


def simulated(mixes: list[int], threshold: float = 0.1, queries: int = 2000, seed: int = 0) -> dict:
    """Both calibrations on a synthetic MS MARCO-shaped pool (see the module's docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    scores, relevant, judged = {}, {}, {}
    for q in range(queries):
        unjudged = int(rng.poisson(3))
        kinds = ["judged"] + ["unjudged"] * unjudged + ["no"] * (399 - unjudged)
        logits = [float(rng.normal(3.0 if kind != "no" else -1.0, 1.5)) for kind in kinds]
        scores[f"q{q}"] = {f"d{i}": value for i, value in enumerate(logits)}
        relevant[f"q{q}"] = {f"d{i}" for i, kind in enumerate(kinds) if kind != "no"}
        judged[f"q{q}"] = {"d0": 1}
    fitted_on = [f"q{q}" for q in range(500)]
    fits = {"every candidate (before)": {qid: list(scores[qid]) for qid in fitted_on}}
    for mix in mixes:
        fits[f"1 positive : {mix} negatives"] = unm.balanced({qid: list(scores[qid]) for qid in fitted_on}, judged,
                                                             mix, random.Random(f"{seed}:calibration"))
    result = {"synthetic": True, "queries": queries, "candidates_per_query": 400, "threshold": threshold, "fits": {}}
    for name, fitted in fits.items():
        platt = unm.calibration({qid: {doc: scores[qid][doc] for doc in docs} for qid, docs in fitted.items()}, judged)
        a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
        above = {qid: {doc for doc, s in docs.items() if expit(a * s + b) >= threshold} for qid, docs in scores.items()}
        caught = [len(above[qid] & relevant[qid] - {"d0"}) for qid in scores]
        false = [sum(1 for doc in relevant[qid] if doc != "d0") for qid in scores]
        removed = [len(above[qid] - relevant[qid]) for qid in scores]
        result["fits"][name] = {"coefficient": a, "intercept": b,
                                "per_query_at_or_above": round(fmean(map(len, above.values())), 2),
                                "false_negatives_caught": round(sum(caught) / max(1, sum(false)), 3),
                                "non_relevant_removed_per_query": round(fmean(removed), 2)}
        print("simulated", name, json.dumps(result["fits"][name]))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("negatives", nargs="?", help="a denoised mine_negatives output (its .run file)")
    parser.add_argument("--simulate", action="store_true", help="the synthetic MS MARCO-shaped pool instead")
    parser.add_argument("--negatives-per-positive", type=int, nargs="+", default=[4, 1],
                        help="class mixes to fit besides every candidate (RocketQA: 4 on MS MARCO, 1 on NQ)")
    args = parser.parse_args()
    if args.simulate or not args.negatives:
        _save("simulated MS MARCO-shaped pool", simulated(args.negatives_per_positive))
        return
    record = read_record(args.negatives)
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items() if files}
    mining, fold = record["params"]["mining"], record["wildcards"]["fold"]
    reranker = mining["reranker"]
    collection = Collection.of(inputs)
    qids = unm.training_queries(collection.folds, fold)
    qrels = trec.read_qrels(collection.qrels)
    indexes = [RunIndex(path, set(qids)) for path in (inputs["bm25"], inputs["first_round"])]
    denoiser = unm.Denoiser(collection, reranker, inputs["reranker"], 2)
    scores = denoiser.scores(unm._judged(unm._candidates(indexes, qids, mining["depth"]), qrels))
    fitted_on = sorted(random.Random(reranker["seed"]).sample(qids, min(reranker["calibration_queries"], len(qids))))
    fits = {"every candidate (before)": {qid: list(scores[qid]) for qid in fitted_on}}
    for mix in args.negatives_per_positive:
        fits[f"1 positive : {mix} negatives"] = unm.balanced(
            {qid: list(scores[qid]) for qid in fitted_on}, qrels, mix, random.Random(f"{reranker['seed']}:calibration"))
    result = {"negatives": args.negatives, "training_queries": len(qids), "depth": mining["depth"],
              "threshold": reranker["threshold"], "calibration_queries": len(fitted_on), "fits": {}}
    for name, fitted in fits.items():
        platt = unm.calibration({qid: {doc: scores[qid][doc] for doc in docs} for qid, docs in fitted.items()}, qrels)
        a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
        probabilities = {qid: {doc: float(expit(a * s + b)) for doc, s in docs.items()} for qid, docs in scores.items()}
        result["fits"][name] = {"fitted_pairs": sum(map(len, fitted.values())), "coefficient": a, "intercept": b,
                                **counts(probabilities, qrels, reranker["threshold"])}
        print(name, json.dumps(result["fits"][name]))
    _save(args.negatives, result)


def _save(key: str, result: dict) -> None:
    saved = json.loads(OUTPUT.read_text()) if OUTPUT.exists() else {}
    saved[key] = result
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(saved, indent=1))


if __name__ == "__main__":
    main()

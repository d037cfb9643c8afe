"""Unified negative mining (UNM; Tang et al. 2022, §3.3): the hard negatives of a second-round retriever.

For each training query, ``sample`` (30) documents are drawn from the non-relevant ones among the top ``depth``
(200) of BM25's run and of the first-round retriever's run ("un-denoised" hard negatives, Tevatron's
``build_train_hn.py`` for each run). "Denoised" hard negatives are candidates a reranker judges non-relevant:
RocketQA's cross-encoder, whose score is a probability, with a threshold of 0.1. The reranker here is the
pipeline's own trained one of the same fold (monoBERT by default), whose score is a logit trained by a pairwise
loss, not a probability; so it is calibrated first (Platt scaling: a logistic regression of the judgements on
the score, fitted on the training queries' scored candidates and judged relevant documents), and a candidate
whose calibrated probability is below the threshold is a denoised negative; ``sample`` of them are drawn per
query. The pool a retriever trains on: ``mined`` = the un-denoised negatives of both runs, ``denoised`` = those
and the denoised ones (the paper's mixing ratio is not given; the union is ours, named in the README).
"""
from __future__ import annotations

import random

from scipy.special import expit

from ..data import trec
from ..files import write_json
from ..rankers.inputs import Collection
from .train_retriever import training_queries

RANK_TAG = "unm"


def non_relevant(ranked: list[str], judged: dict[str, int]) -> list[str]:
    return [doc for doc in ranked if judged.get(doc, 0) <= 0]


def sampled(candidates: list[str], count: int, rng: random.Random) -> list[str]:
    """``count`` of the candidates (all of them when fewer), drawn without replacement."""
    return rng.sample(candidates, min(count, len(candidates)))


def top_documents(path: str, qids: list[str], depth: int) -> dict[str, list[str]]:
    run = trec.read_run(path, set(qids), depth)
    return {qid: [doc for doc, _ in trec.ranked(run.get(qid, {}))] for qid in qids}


def calibration(scores: dict[str, dict[str, float]], qrels: trec.Qrels):
    """Platt scaling of the reranker's scores: the logistic regression of relevance on the score."""
    from sklearn.linear_model import LogisticRegression

    pairs = [(score, int(qrels.get(qid, {}).get(doc, 0) > 0)) for qid, docs in scores.items()
             for doc, score in docs.items()]
    labels = {label for _, label in pairs}
    if labels != {0, 1}:
        raise ValueError(f"cannot calibrate the reranker: its scored training candidates are all "
                         f"{'relevant' if labels == {1} else 'non-relevant'}")
    return LogisticRegression(C=1e6).fit([[score] for score, _ in pairs], [label for _, label in pairs])


def reranker_scores(collection: Collection, candidates: dict[str, list[str]], reranker: dict, weights: str,
                    threads: int) -> dict[str, dict[str, float]]:
    """The trained reranker's score of each query's candidates (loaded as its ``train`` job built it)."""
    from ..methods.learned import load_learned_state
    from ..rankers import inputs
    from ..rankers.configured import configured_ranker, saved_weights, seed_everything
    from ..rankers.rerank import rerank

    seed_everything(reranker["seed"])
    model, _, tokenizer = configured_ranker(reranker["ranker"], reranker["backbone"], reranker["settings"],
                                            reranker["resolved"], reranker["training"]["lr"], reranker["execution"],
                                            threads)
    load_learned_state(model, saved_weights(weights, model)["state"])
    qids = sorted(candidates)
    queries, docs = inputs.texts(collection, qids, tokenizer, reranker["settings"]["max_query_len"],
                                 reranker["settings"]["max_doc_len"], keep_docs=False)
    data = inputs.RankingData(queries=queries, docs=docs, qrels=trec.read_qrels(collection.qrels),
                              candidates={qid: {doc: 0.0 for doc in candidates[qid]} for qid in qids})
    return rerank(model, data, qids, reranker["rerank"]["batch_size"], desc="denoise")


def mine_negatives(collection: Collection, bm25: str, first_round: str, fold: str, mining: dict, threads: int,
                   output: str, summary: str, reranker_weights: str | None = None) -> dict:
    """The ``mine_negatives`` rule: each training query's pool of hard negatives as a run file (``output``; ranks
    carry no meaning) and what was mined (``summary``: counts, the calibration, what denoising removed)."""
    qids = training_queries(collection.folds, fold)
    qrels = trec.read_qrels(collection.qrels)
    rng = random.Random(mining["seed"])
    tops = [top_documents(path, qids, mining["depth"]) for path in (bm25, first_round)]
    candidates = {qid: [non_relevant(top[qid], qrels.get(qid, {})) for top in tops] for qid in qids}
    pools = {qid: {doc for found in candidates[qid] for doc in sampled(found, mining["sample"], rng)} for qid in qids}
    facts = {"negatives": mining["negatives"], "training_queries": len(qids), "depth": mining["depth"],
             "sample": mining["sample"], "undenoised": sum(len(pool) for pool in pools.values())}
    if mining["negatives"] == "denoised":
        facts |= _denoise(collection, qids, qrels, tops, candidates, pools, mining, rng, threads, reranker_weights)
    facts["pool"] = sum(len(pool) for pool in pools.values())
    trec.write_run(output, ((qid, {doc: -rank for rank, doc in enumerate(sorted(pools[qid]))}) for qid in qids
                            if pools[qid]), tag=RANK_TAG)
    write_json(summary, facts)
    return facts


def _denoise(collection: Collection, qids: list[str], qrels: trec.Qrels, tops: list[dict[str, list[str]]],
             candidates: dict[str, list[list[str]]], pools: dict[str, set[str]], mining: dict, rng: random.Random,
             threads: int, weights: str | None) -> dict:
    """Add to each pool ``sample`` of the candidates whose calibrated reranker probability is below the threshold;
    the facts: the calibration, how many candidates each side of it, how many judged relevant ones it caught."""
    reranker = mining["reranker"]
    scored = {qid: list(dict.fromkeys([doc for top in tops for doc in top[qid]]
                                      + [doc for doc, rel in qrels.get(qid, {}).items() if rel > 0])) for qid in qids}
    scores = reranker_scores(collection, scored, reranker, weights, threads)
    model = calibration(scores, qrels)
    def probability(qid: str, doc: str) -> float:
        return float(expit(model.coef_[0][0] * scores[qid][doc] + model.intercept_[0]))

    below = above = relevant_above = 0
    for qid in qids:
        pool = list(dict.fromkeys(doc for found in candidates[qid] for doc in found))
        kept = [doc for doc in pool if probability(qid, doc) < reranker["threshold"]]
        below, above = below + len(kept), above + len(pool) - len(kept)
        pools[qid] |= set(sampled(kept, mining["sample"], rng))
        relevant_above += sum(probability(qid, doc) >= reranker["threshold"]
                              for doc, rel in qrels.get(qid, {}).items() if rel > 0)
    return {"calibration": {"method": "Platt scaling (sklearn LogisticRegression, C=1e6) of relevance on the score",
                            "coefficient": float(model.coef_[0][0]), "intercept": float(model.intercept_[0])},
            "threshold": reranker["threshold"], "candidates_below": below, "candidates_at_or_above": above,
            "relevant_at_or_above": relevant_above}

"""Unified negative mining (UNM; Tang et al. 2022, §3.3): the hard negatives of a second-round retriever.

For each training query, ``sample`` (30) documents are drawn from the non-relevant ones among the top ``depth``
(200) of BM25's run and of the first-round retriever's run ("un-denoised" hard negatives, Tevatron's
``build_train_hn.py`` for each run). "Denoised" hard negatives are candidates a reranker judges non-relevant:
RocketQA's cross-encoder, whose score is a probability, with a threshold of 0.1. The reranker here is the
pipeline's own trained one of the same fold (monoBERT by default), whose score is a logit trained by a pairwise
loss, not a probability; so it is calibrated first (Platt scaling: a logistic regression of the judgements on
the score), and a candidate whose calibrated probability is below the threshold is a denoised negative;
``sample`` of them are drawn per query.

What the probability is of is the calibration's choice. RocketQA's cross-encoder, whose 0.1 DPTDR takes, is a
binary classifier trained on each query's judged positives and ``calibration_negatives`` (4, RocketQA's MS MARCO
mix; its NQ one is 1) non-relevant candidates for each: its score is the probability of relevance at that class
mix, high for what looks relevant whether or not it was judged. Fitted on every scored candidate instead (about
one judged positive in 330 of a top 200 of two runs), the scaling would give the probability of being *judged*
relevant at that rare prior: only a query's top one to three candidates reach 0.1, and the unjudged relevant ones
RocketQA's denoising exists to remove stay. So the scaling is fitted on the judged relevant documents of a seeded
sample of ``calibration_queries`` training queries (all of them when there are fewer) and, per positive,
``calibration_negatives`` non-relevant candidates drawn from the query's top ``depth`` of both runs: the
cross-encoder's own training mix, so the threshold means what RocketQA's does. The pool a
retriever trains on: ``mined`` = the un-denoised negatives of both runs, ``denoised`` = those and the denoised
ones (the paper's mixing ratio is not given; the union is ours, named in the README).

The queries are mined ``BLOCK`` at a time, their candidates read from the runs (``RunIndex``), scored and their
pools written before the next block: MS MARCO's 503 k training queries × 2 runs × depth 200 are never held.
"""
from __future__ import annotations

import random
from typing import Iterator

from scipy.special import expit

from ..data import trec
from .. import progress_log
from ..data.run_index import RunIndex
from ..execution.seam import Execution
from ..files import write_json
from ..models.inputs import Collection
from .train import training_queries

RANK_TAG = "unm"
BLOCK = 1_000            # training queries mined at a time
Scores = dict[str, dict[str, float]]


def sampled(candidates: list[str], count: int, rng: random.Random) -> list[str]:
    """``count`` of the candidates (all of them when fewer), drawn without replacement."""
    return rng.sample(candidates, min(count, len(candidates)))


def calibration(scores: Scores, qrels: trec.Qrels):
    """Platt scaling of the reranker's scores: the logistic regression of relevance on the score."""
    from sklearn.linear_model import LogisticRegression

    pairs = [(score, int(qrels.get(qid, {}).get(doc, 0) > 0)) for qid, docs in scores.items()
             for doc, score in docs.items()]
    labels = {label for _, label in pairs}
    if labels != {0, 1}:
        raise ValueError(f"cannot calibrate the reranker: its scored training candidates are all "
                         f"{'relevant' if labels == {1} else 'non-relevant'}")
    return LogisticRegression(C=1e6).fit([[score] for score, _ in pairs], [label for _, label in pairs])


class Denoiser:
    """The trained reranker (loaded as its ``train`` job built it, placed where the config says) and its
    calibration, which scores candidates and tells the probability that one is relevant."""

    def __init__(self, collection: Collection, reranker: dict, weights: str, threads: int) -> None:
        from ..models.learned import load_learned_state
        from ..semi_siamese.configured import configured_ranker, saved_weights, seed_everything

        seed_everything(reranker["seed"])
        self.collection, self.reranker = collection, reranker
        self.model, _, self.tokenizer = configured_ranker(
            reranker["ranker"], reranker["backbone"], reranker["settings"], reranker["resolved"],
            reranker["training"]["lr"], Execution.of(reranker["execution"], threads))
        load_learned_state(self.model, saved_weights(weights, self.model)["state"])
        self.platt = None

    def scores(self, candidates: dict[str, list[str]]) -> Scores:
        """The reranker's score of each query's candidates."""
        from ..models import inputs
        from ..semi_siamese.rerank import rerank

        qids = sorted(candidates)
        settings = self.reranker["settings"]
        queries, docs = inputs.texts(self.collection, qids, self.tokenizer, settings["max_query_len"],
                                     settings["max_doc_len"], keep_docs=False)
        data = inputs.RankingData(queries=queries, docs=docs, qrels={},
                                  candidates={qid: {doc: 0.0 for doc in candidates[qid]} for qid in qids})
        return rerank(self.model, data, qids, self.reranker["rerank"]["batch_size"], desc="denoise")

    def calibrate(self, candidates: dict[str, list[str]], qrels: trec.Qrels, negatives_per_positive: int,
                  rng: random.Random) -> dict:
        """Fit the Platt scaling on these queries' judged relevant documents and ``negatives_per_positive``
        non-relevant candidates drawn for each (``balanced``: the class mix of RocketQA's cross-encoder)."""
        fitted = balanced(candidates, qrels, negatives_per_positive, rng)
        self.platt = calibration(self.scores(fitted), qrels)
        positives = sum(len(trec.relevant(qrels, qid)) for qid in fitted)
        return {"method": "Platt scaling (sklearn LogisticRegression, C=1e6) of relevance on the score, on each "
                          "query's judged relevant documents and non-relevant candidates drawn for each "
                          "(RocketQA's cross-encoder's class mix)",
                "queries": len(fitted), "negatives_per_positive": negatives_per_positive, "positives": positives,
                "negatives": sum(map(len, fitted.values())) - positives,
                "coefficient": float(self.platt.coef_[0][0]), "intercept": float(self.platt.intercept_[0])}

    def probabilities(self, candidates: dict[str, list[str]]) -> Scores:
        return {qid: {doc: float(expit(self.platt.coef_[0][0] * score + self.platt.intercept_[0]))
                      for doc, score in docs.items()} for qid, docs in self.scores(candidates).items()}


def balanced(candidates: dict[str, list[str]], qrels: trec.Qrels, negatives_per_positive: int,
             rng: random.Random) -> dict[str, list[str]]:
    """Per query with a judged relevant document among its ``candidates``, those documents and
    ``negatives_per_positive`` of its non-relevant candidates for each (all of them when fewer), drawn by ``rng``;
    queries without one are left out (RocketQA's cross-encoder trains on queries with a positive)."""
    fitted = {}
    for qid in sorted(candidates):
        judged = qrels.get(qid, {})
        positives = [doc for doc in candidates[qid] if judged.get(doc, 0) > 0]
        if positives:
            negatives = [doc for doc in candidates[qid] if judged.get(doc, 0) <= 0]
            fitted[qid] = positives + sampled(negatives, negatives_per_positive * len(positives), rng)
    return fitted


def _candidates(indexes: list[RunIndex], qids: list[str], depth: int) -> dict[str, list[list[str]]]:
    """Each query's top ``depth`` documents of every run."""
    return {qid: [[doc for doc, _ in index.top(qid, depth)] for index in indexes] for qid in qids}


def _judged(tops: dict[str, list[list[str]]], qrels: trec.Qrels) -> dict[str, list[str]]:
    """What the reranker scores for a query: its candidates in both runs and its judged relevant documents."""
    return {qid: list(dict.fromkeys([doc for top in runs for doc in top] + trec.relevant(qrels, qid)))
            for qid, runs in tops.items()}


def mine_negatives(collection: Collection, bm25: str, first_round: str, fold: str, mining: dict, threads: int,
                   output: str, summary: str, reranker_weights: str | None = None) -> dict:
    """The ``mine_negatives`` rule: each training query's pool of hard negatives as a run file (``output``; ranks
    carry no meaning) and what was mined (``summary``: counts, the calibration, what denoising removed)."""
    qids = training_queries(collection.folds, fold)
    qrels = trec.read_qrels(collection.qrels)
    indexes = [RunIndex(path, set(qids)) for path in (bm25, first_round)]
    # two generators: the un-denoised draw is the same whether or not denoising follows, so a denoised pool is
    # the mined pool plus its denoised sample (Table 9's two UNM rows differ by denoising only)
    rng, denoise_rng = random.Random(mining["seed"]), random.Random(f"{mining['seed']}:denoised")
    denoising = mining["negatives"] == "denoised"
    facts = {"negatives": mining["negatives"], "training_queries": len(qids), "depth": mining["depth"],
             "sample": mining["sample"], "undenoised": 0, "pool": 0}
    denoiser = None
    if denoising:
        reranker = mining["reranker"]
        denoiser = Denoiser(collection, reranker, reranker_weights, threads)
        fitted_on = sorted(random.Random(reranker["seed"]).sample(qids, min(reranker["calibration_queries"],
                                                                            len(qids))))
        facts["calibration"] = denoiser.calibrate(_judged(_candidates(indexes, fitted_on, mining["depth"]), qrels),
                                                  qrels, reranker["calibration_negatives"],
                                                  random.Random(f"{reranker['seed']}:calibration"))
        facts |= {"threshold": reranker["threshold"], "candidates_below": 0, "candidates_at_or_above": 0,
                  "relevant_at_or_above": 0}

    def pools() -> Iterator[tuple[str, dict[str, float]]]:
        progress_log.start("mining the training queries", len(qids), "queries")
        for block in trec.query_blocks(qids, BLOCK):
            tops = _candidates(indexes, block, mining["depth"])
            probabilities = denoiser.probabilities(_judged(tops, qrels)) if denoiser else {}
            for qid in block:
                found = [trec.not_relevant(qrels, qid, top) for top in tops[qid]]
                pool = {doc for candidates in found for doc in sampled(candidates, mining["sample"], rng)}
                facts["undenoised"] += len(pool)
                if denoiser:
                    pool |= _denoised(found, trec.relevant(qrels, qid), probabilities.get(qid, {}), mining,
                                      denoise_rng, facts)
                facts["pool"] += len(pool)
                if pool:
                    yield qid, {doc: -rank for rank, doc in enumerate(sorted(pool))}
            progress_log.advance("mining the training queries", len(block))
        progress_log.finish("mining the training queries")

    trec.write_run(output, pools(), tag=RANK_TAG)
    if denoiser:
        facts["candidates_at_or_above_per_query"] = facts["candidates_at_or_above"] / max(1, len(qids))
    write_json(summary, facts)
    return facts


def _denoised(found: list[list[str]], relevant: list[str], probability: dict[str, float], mining: dict,
              rng: random.Random, facts: dict) -> set[str]:
    """``sample`` of the query's candidates whose calibrated probability is below the threshold; the facts count
    how many candidates fall each side of it and how many judged relevant documents it catches."""
    threshold = mining["reranker"]["threshold"]
    pool = list(dict.fromkeys(doc for candidates in found for doc in candidates))
    kept = [doc for doc in pool if probability[doc] < threshold]
    facts["candidates_below"] += len(kept)
    facts["candidates_at_or_above"] += len(pool) - len(kept)
    facts["relevant_at_or_above"] += sum(probability[doc] >= threshold for doc in relevant)
    return set(sampled(kept, mining["sample"], rng))

"""The ``train`` rule: one ranker with one fine-tuning method, trained on one fold with one seed.

Training triples come from the fold's training queries (sampled from their BM25 candidates) or from
fixed training triples (MS MARCO's), the validation queries (all of the fold's, or a fixed sample of
a large split) are reranked and scored after every epoch, and the best epoch's learned weights are
kept with a summary (history, trainable-parameter count; with a sample, the kept weights' score on the
whole validation split). A sequential hybrid's job starts from its first part's kept weights
(``first_stage``), which stay frozen while the second part trains.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch

from ..data import folds
from ..evaluation.metrics import evaluate_run, metric_summary
from ..files import atomic_write
from ..models.learned import count_trainable, load_first_stage, load_learned_state
from ..models import inputs
from ..execution.seam import Execution
from .configured import configured_ranker, ranking_data, saved_weights, seed_everything
from .rankers import Ranker
from .rerank import rerank
from ..training.checkpoint import Checkpoint
from .loop import CandidateTriples, TriplesFile, train


def validation_queries(valid: list[str], sample: dict | None) -> list[str]:
    """The queries validated after every epoch: the split's, or a fixed sample of ``sample['queries']`` of
    them drawn with ``sample['seed']`` (reranking all 5,193 of MS MARCO's dev queries every epoch would
    dominate the job)."""
    if not sample or sample["queries"] >= len(valid):
        return list(valid)
    return sorted(random.Random(sample["seed"]).sample(sorted(valid), sample["queries"]))


def train_ranker(collection: inputs.Collection, candidates: str, dataset: str, fold: str, seed: int, ranker: str,
                 backbone: dict, settings: dict, method: dict, training: dict, reranking: dict, validation: dict,
                 execution: dict, threads: int, weights: str, summary: str, resume_key: str,
                 first_stage: str | None = None, triples: str | None = None) -> None:
    """Train, validate every epoch, keep the best epoch's weights (``weights``) and a ``summary``.

    ``candidates`` is the BM25 run; ``triples``, when given, the fixed training triples to read instead
    of sampling from it; ``resume_key`` identifies the job, so a checkpoint left by this job (and no
    other) is resumed after a kill.
    """
    start = time.time()
    seed_everything(seed)
    placement = Execution.of(execution, threads)
    model, groups, tokenizer = configured_ranker(ranker, backbone, settings, method, training["lr"], placement)
    started_from = {}
    if first_stage:
        saved = saved_weights(first_stage, model)
        load_first_stage(model, saved["state"])
        started_from = {"first_stage": {"weights": first_stage, "best_epoch": saved["epoch"]}}
    split = folds.rotation(folds.read_folds(collection.folds), fold)
    if triples:
        queries, docs = inputs.texts(collection, split["train"], tokenizer, settings["max_query_len"],
                                     settings["max_doc_len"], keep_docs=False)
        train_data, pairs = inputs.RankingData(queries, docs, {}, {}), TriplesFile(triples)
    else:
        train_data = ranking_data(collection, candidates, split["train"], training["train_depth"], tokenizer, settings)
        pairs = CandidateTriples(train_data, split["train"])
    metric = validation["metric"]

    def measure(trained: Ranker, data: inputs.RankingData, qids: list[str]) -> float:
        run = rerank(trained, data, qids, reranking["batch_size"], desc="validation")
        return metric_summary(evaluate_run(run, data.qrels, [metric], qids), [metric])["mean"][metric]

    validated = validation_queries(split["valid"], validation["sample"])
    valid_data = ranking_data(collection, candidates, validated, reranking["depth"], tokenizer, settings)
    checkpoint = Checkpoint(Path(weights).with_suffix(".ckpt"), resume_key)
    result = train(model, groups, train_data, pairs, lambda trained: measure(trained, valid_data, validated),
                   training, seed, checkpoint)
    sampled = {}
    if len(validated) < len(split["valid"]):     # the kept weights on the whole split, once
        load_learned_state(model, result.best_state)
        whole = ranking_data(collection, candidates, split["valid"], reranking["depth"], tokenizer, settings,
                             keep_docs=False)
        sampled = {"validation_queries": validated, "full_validation": {
            "queries": len(split["valid"]), metric: measure(model, whole, split["valid"])}}
    with atomic_write(weights, "wb") as handle:
        torch.save({"state": result.best_state, "epoch": result.best_epoch}, handle)
    record = {"dataset": dataset, "ranker": ranker, "method": method["name"], "fold": fold, "seed": seed,
              **started_from, "trainable_parameters": count_trainable(model), "validation_metric": metric,
              "best_epoch": result.best_epoch, "best_validation": result.best_score, **sampled,
              "execution": placement.used(), "epochs": result.history, "seconds": time.time() - start}
    with atomic_write(summary) as handle:
        json.dump(record, handle, indent=1)
    checkpoint.remove()

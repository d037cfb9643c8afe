"""The ``train`` rule: one ranker with one fine-tuning method, trained on one fold with one seed.

Training triples come from the fold's training queries, the validation queries are reranked and
scored after every epoch, and the best epoch's learned weights are kept with a summary (history,
trainable-parameter count). A sequential hybrid's job starts from its first part's kept weights
(``first_stage``), which stay frozen while the second part trains.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from ..data import folds
from ..evaluation.metrics import evaluate_run, metric_summary
from ..files import atomic_write
from ..methods.learned import count_trainable, load_first_stage
from ..rankers.configured import configured_ranker, ranking_data, saved_weights, seed_everything
from ..rankers.inputs import Collection
from ..rankers.models import Ranker
from ..rankers.rerank import rerank
from .checkpoint import Checkpoint
from .loop import train


def train_ranker(collection: Collection, candidates: str, dataset: str, fold: str, seed: int, ranker: str,
                 backbone: dict, settings: dict, method: dict, training: dict, reranking: dict, validation: dict,
                 device: str, threads: int, weights: str, summary: str, resume_key: str,
                 first_stage: str | None = None) -> None:
    """Train, validate every epoch, keep the best epoch's weights (``weights``) and a ``summary``.

    ``candidates`` is the BM25 run; ``resume_key`` identifies the job, so a checkpoint left by this
    job (and no other) is resumed after a kill.
    """
    start = time.time()
    seed_everything(seed)
    model, groups, tokenizer = configured_ranker(ranker, backbone, settings, method, training["lr"], device, threads)
    started_from = {}
    if first_stage:
        saved = saved_weights(first_stage, model)
        load_first_stage(model, saved["state"])
        started_from = {"first_stage": {"weights": first_stage, "best_epoch": saved["epoch"]}}
    split = folds.rotation(folds.read_folds(collection.folds), fold)
    train_data = ranking_data(collection, candidates, split["train"], training["train_depth"], tokenizer, settings)
    valid_data = ranking_data(collection, candidates, split["valid"], reranking["depth"], tokenizer, settings)
    metric = validation["metric"]

    def validate(trained: Ranker) -> float:
        run = rerank(trained, valid_data, split["valid"], reranking["batch_size"], desc="validation")
        per_query = evaluate_run(run, valid_data.qrels, [metric], split["valid"])
        return metric_summary(per_query, [metric])["mean"][metric]

    checkpoint = Checkpoint(Path(weights).with_suffix(".ckpt"), resume_key)
    result = train(model, groups, train_data, split["train"], validate, training, seed, checkpoint)
    with atomic_write(weights, "wb") as handle:
        torch.save({"state": result.best_state, "epoch": result.best_epoch}, handle)
    record = {"dataset": dataset, "ranker": ranker, "method": method["name"], "fold": fold, "seed": seed,
              **started_from, "trainable_parameters": count_trainable(model), "validation_metric": metric,
              "best_epoch": result.best_epoch, "best_validation": result.best_score, "epochs": result.history,
              "seconds": time.time() - start}
    with atomic_write(summary) as handle:
        json.dump(record, handle, indent=1)
    checkpoint.remove()

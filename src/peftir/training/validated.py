"""A first stage's or reranker's updates with validation every ``validate_every`` and the best state kept.

Shared by SPLADE (``train_splade``) and its rerankers (``train_cross_encoder``): each gives its own update (the
loss of one batch, backward done) and its own ranking of the validation queries' candidates; the training
dataset's ``validation_metric`` decides (MRR@10 on MS MARCO, as the released SPLADE code; nDCG@10 on the BEIR
collections of Table 5).
"""
from __future__ import annotations

import time
from pathlib import Path
from statistics import fmean
from typing import Callable

import torch
from torch import nn

from ..data import trec
from ..evaluation.metrics import evaluate_run
from ..files import atomic_directory, write_json
from ..models.learned import learned_state, load_learned_state
from .steps import train_updates

VALIDATION_METRIC = "RR@10"        # when the settings name none
RELEASED_ADAM_EPS = 1e-6           # naver/splade's bert_optim: transformers.optimization.AdamW, its default eps
WEIGHTS = "learned.pt"      # in a trained retriever's or reranker's directory: its learned parameters


def train_validated(model: nn.Module, update: Callable[[int], float], rank: Callable[[], trec.Run],
                    qrels: trec.Qrels, valid_qids: list[str], lr: float, settings: dict) -> dict:
    """``settings['steps']`` updates (AdamW with eps 1e-6, linear warm-up and decay, weight decay on every trainable
    parameter, LayerNorms and biases included, as the released SPLADE optimiser; the rerankers, whose code was not
    released, train with it too; the gradient clipped to ``max_grad_norm``); after every ``validate_every`` and
    the last, ``rank()``'s ``settings['validation_metric']`` on the validation queries. Returns the losses, the
    validation curve and the best state with its step (the state before any update when none validates better)."""
    steps, every = settings["steps"], settings["validate_every"]
    metric = settings.get("validation_metric", VALIDATION_METRIC)
    best: dict = {"state": learned_state(model), "step": 0, metric: None}
    curve: list[dict] = []

    def validate(step: int) -> None:
        if step % every and step != steps:
            return
        model.eval()
        per_query = evaluate_run(rank(), qrels, [metric], valid_qids)
        score = fmean(v[metric] for v in per_query.values()) if per_query else 0.0
        curve.append({"step": step, metric: score})
        print(f"step {step}: validation {metric} {score:.4f}", flush=True)
        if best[metric] is None or score > best[metric]:
            best.update(state=learned_state(model), step=step, **{metric: score})
        model.train()

    losses = train_updates(model, update, steps, lr, settings["warmup_steps"], settings["weight_decay"],
                           log_every=max(1, steps // 10), no_decay=(), after=validate,
                           max_grad_norm=settings["max_grad_norm"], eps=RELEASED_ADAM_EPS)
    return {"losses": losses, "validation": curve, "best": best}


def save_trained(model: nn.Module, trained: dict, output: str, summary: str, about: dict, counts: dict,
                 started: float) -> dict:
    """The best state to ``output``/``WEIGHTS`` (atomically) and the job's facts to ``summary``: ``about`` (method,
    backbone, seed, query counts), the parameter ``counts`` (trainable, percent_trainable, ...), the losses and
    validation curve, the seconds since ``started`` and where the model ran."""
    with atomic_directory(output) as building:
        torch.save(trained["best"]["state"], Path(building) / WEIGHTS)
    facts = {**about, "trainable_parameters": counts["trainable"], "percent_trainable": counts["percent_trainable"],
             "parameters": counts, "losses": trained["losses"], "validation": trained["validation"],
             "best_step": trained["best"]["step"], "seconds": round(time.monotonic() - started, 1),
             "execution": model.execution.used()}
    write_json(summary, facts)
    return facts


def load_kept(model: nn.Module, trained: str) -> None:
    """Put back the learned parameters ``save_trained`` kept in the directory ``trained``."""
    load_learned_state(model, torch.load(Path(trained) / WEIGHTS, map_location=model.execution.device,
                                             weights_only=True))

"""What one job of each of the Semi-Siamese GPU rules puts through its model (``peftir.execution.work``), for
``peftir plan``'s GPU-hours: registered as its system's ``costs``. No job imports this module."""
from __future__ import annotations

from ..execution.work import Config, CostFunction, Costs, Passes, Work, pair_tokens, split_queries
from .contract import PARAMS


def _train(config: Config, wc: dict) -> Work:
    p = {name: PARAMS[name](config, wc)
         for name in ("backbone", "ranker", "method", "training", "rerank", "validation")}
    pair, single = pair_tokens(p["ranker"])
    per_pair = pair if wc["ranker"] == "monobert" else single
    training = p["training"]
    sample = p["validation"]["sample"]
    validation = sample["queries"] if sample else split_queries(config, wc["dataset"], "valid")
    full = p["method"]["name"] == "full"
    return Work(p["backbone"]["name"], trained=training["epochs"] * training["pairs_per_epoch"] * 2 * per_pair
                if full else 0, frozen=0 if full else training["epochs"] * training["pairs_per_epoch"] * 2 * per_pair,
                encoded=training["epochs"] * validation * p["rerank"]["depth"] * per_pair,
                passes=Passes(training["micro_batch"], training["batch_size"], 2 * per_pair))


def _rerank(config: Config, wc: dict) -> Work:
    ranker = PARAMS["ranker"](config, wc)
    pair, single = pair_tokens(ranker)
    test = split_queries(config, wc["dataset"], "test")
    return Work(config["backbone"]["name"], encoded=test * config["rerank"]["depth"] *
                (pair if wc["ranker"] == "monobert" else single))


COSTS = Costs({"train": _train, "train_first_stage": _train, "rerank": _rerank})

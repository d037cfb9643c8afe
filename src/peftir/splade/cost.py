"""What one job of each of the SPLADE GPU rules puts through its model (``peftir.execution.work``), for
``peftir plan``'s GPU-hours: registered as its system's ``costs``. No job imports this module."""
from __future__ import annotations

from ..data.sizes import collection_size
from ..execution.work import Config, CostFunction, Costs, Passes, Work, documents, sized_backbone, split_queries
from .contract import PARAMS


def _train_splade(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade"](config, wc)
    train = spec["train"]
    tokens = train["steps"] * train["batch_size"] * (train["q_max_len"] + 2 * train["d_max_len"])
    validations = train["steps"] // train["validate_every"] + 1
    queries = train["validation_queries"] or split_queries(config, wc["dataset"], "valid")
    full = spec["method"]["name"] == "ft"
    return Work(sized_backbone(config, spec["backbone"]), trained=tokens if full else 0, frozen=0 if full else tokens,
                head=True, encoded=validations * queries * train["validation_depth"] * train["d_max_len"],
                passes=Passes(train["chunk"], train["batch_size"], max(train["q_max_len"], train["d_max_len"]), 1,
                              coupled=True))


def _splade_index(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade"](config, wc)
    return Work(sized_backbone(config, spec["backbone"]), head=True,
                encoded=documents(config, wc["target"]) * spec["train"]["d_max_len"])


def _splade_search(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade"](config, wc)
    queries = collection_size(config["datasets"][wc["target"]]["irds"])[1]
    return Work(sized_backbone(config, spec["backbone"]), head=True, encoded=queries * spec["train"]["q_max_len"])


def _train_splade_reranker(config: Config, wc: dict) -> Work:
    spec = PARAMS["splade_reranker"](config, wc)
    train = spec["train"]
    full = spec["method"]["name"] == "ft"
    tokens = train["steps"] * train["batch_size"] * 2 * train["max_len"]
    validations = train["steps"] // train["validate_every"] + 1
    queries = train["validation_queries"] or split_queries(config, wc["dataset"], "valid")
    return Work(spec["backbone"], trained=tokens if full else 0, frozen=0 if full else tokens,
                encoded=validations * queries * train["validation_depth"] * train["max_len"],
                passes=Passes(train["batch_size"], train["batch_size"], 2 * train["max_len"]))   # one pass a side


def _splade_rerank(config: Config, wc: dict) -> Work:
    settings, spec = PARAMS["splade_rerank"](config, wc), PARAMS["splade_reranker"](config, wc)
    queries = split_queries(config, wc["target"], "test")
    return Work(spec["backbone"], encoded=queries * settings["depth"] * spec["train"]["max_len"])


COSTS = Costs(
    {"train_splade": _train_splade, "splade_index": _splade_index, "splade_search": _splade_search,
     "train_splade_reranker": _train_splade_reranker, "splade_rerank": _splade_rerank},
    hub={"naver/splade-cocondenser-ensembledistil": ("bert", {}), "castorini/tct_colbert-v2-msmarco": ("bert", {}),
         "Luyu/co-condenser-marco": ("bert", {})})

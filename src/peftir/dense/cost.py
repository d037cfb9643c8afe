"""What one job of each of the dense retrieval and pretraining GPU rules puts through its model
(``peftir.execution.work``), for ``peftir plan``'s GPU-hours: registered as its system's ``costs``. No job imports
this module."""
from __future__ import annotations

from ..data.sizes import collection_size
from ..execution.work import (Config, CostFunction, Costs, Passes, Work, documents, pair_tokens, sized_backbone,
                              split_queries)
from .contract import PARAMS


def _train_retriever(config: Config, wc: dict) -> Work:
    spec = PARAMS["retriever"](config, wc)
    train = spec["train"]
    texts = train["batch_size"] * (1 + train["passages"])
    tokens = train["steps"] * train["batch_size"] * (train["q_max_len"] + train["passages"] * train["p_max_len"])
    dpt = spec["method"]["name"] == "dpt"
    prompts = spec["method"].get("length", 0)
    tokens += train["steps"] * texts * prompts if dpt else 0      # prompts lengthen attention: counted as tokens
    return Work(sized_backbone(config, spec["backbone"]), trained=0 if dpt else tokens, frozen=tokens if dpt else 0,
                passes=Passes(train["chunk"], texts - train["batch_size"], train["p_max_len"] + (prompts if dpt else 0),
                              coupled=True))


def _dense_index(config: Config, wc: dict) -> Work:
    spec, search = PARAMS["retriever"](config, wc), PARAMS["dense_search"](config, wc)
    return Work(sized_backbone(config, spec["backbone"]),
                encoded=documents(config, wc["dataset"]) * search["p_max_len"])


def _dense_search(config: Config, wc: dict) -> Work:
    """Every query of the dataset searched (a ``target``'s, TREC DL 2019's, in the dataset's documents)."""
    spec, search = PARAMS["retriever"](config, wc), PARAMS["dense_search"](config, wc)
    asked = wc.get("target", wc["dataset"])
    queries = collection_size(config["datasets"][asked]["irds"])[1] or sum(
        split_queries(config, asked, split) for split in ("train", "valid", "test"))
    return Work(sized_backbone(config, spec["backbone"]), encoded=queries * search["q_max_len"],
                searched=queries * documents(config, wc["dataset"]),
                note="exact search on the GPU (hnsw runs it too, for its recall against exact)")


def _mine(config: Config, wc: dict) -> Work:
    mining = PARAMS["mining"](config, wc)
    if "reranker" not in mining:
        return Work(config["backbone"]["name"], note="sampling only: no model")
    pair, _ = pair_tokens(mining["reranker"]["settings"])
    queries = split_queries(config, wc["dataset"], "train")
    return Work(config["backbone"]["name"], encoded=queries * 2 * mining["depth"] * pair)


def _pretrain(config: Config, wc: dict) -> Work:
    spec = PARAMS["pretraining"](config, wc)
    rows = spec["batch_size"] * (1 if spec["objective"] == "condenser" else 2)
    tokens = spec["steps"] * rows * spec["max_len"]
    prompts = "prompts" in spec         # deep prompts alone train (DPTDR Table 6): the backbone runs frozen
    heads = {"condenser": 2, "cocondenser": 2, "rip": 1, "ict": 0}[spec["objective"]]    # ICT: no MLM
    return Work(spec["backbone"], trained=0 if prompts else tokens, frozen=tokens if prompts else 0,
                head=spec["objective"] != "ict",
                passes=Passes(spec["chunk"], rows, spec["max_len"], heads, coupled=spec["objective"] != "condenser"))


COSTS = Costs(
    {"train_retriever": _train_retriever, "dense_index": _dense_index, "dense_index_untrained": _dense_index,
     "dense_search": _dense_search, "dense_search_untrained": _dense_search, "dense_search_target": _dense_search,
     "mine_negatives": _mine, "pretrain": _pretrain},
    hub={"Luyu/condenser": ("bert", {}), "Luyu/co-condenser-marco": ("bert", {}),
         "roberta-large": ("roberta", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                       "intermediate_size": 4096, "vocab_size": 50265,
                                       "max_position_embeddings": 514})})      # RoBERTa-large: 24 × 1,024

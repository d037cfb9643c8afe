"""What one job of each of the modular CLIR GPU rules puts through its model (``peftir.execution.work``), for
``peftir plan``'s GPU-hours: registered as its system's ``costs``. No job imports this module."""
from __future__ import annotations

from ..execution.work import Config, CostFunction, Costs, Passes, Work
from .contract import PARAMS


def _language_module(config: Config, wc: dict) -> Work:
    settings = PARAMS["language_module"](config, wc)
    steps = settings.get("steps") or sum(settings["phase_steps"])
    tokens = steps * settings["batch_size"] * settings["block_size"]
    return Work(config["modular_clir"]["backbone"]["name"], frozen=tokens, head=True,
                passes=Passes(settings["chunk"], settings["batch_size"], settings["block_size"], 1))


def _ranking_module(config: Config, wc: dict) -> Work:
    settings = PARAMS["ranking_module"](config, wc)
    steps = settings.get("steps") or sum(settings["phase_steps"])
    tokens = steps * settings["batch_size"] * settings["max_len"]
    full = settings["kind"] == "full"
    return Work(config["modular_clir"]["backbone"]["name"], trained=tokens if full else 0,
                frozen=0 if full else tokens, passes=Passes(settings["chunk"], settings["batch_size"],
                                                            settings["max_len"]))


def _rerank_clir(config: Config, wc: dict) -> Work:
    rerank = config["modular_clir"]["rerank"]
    return Work(config["modular_clir"]["backbone"]["name"], encoded=60 * rerank["depth"] * rerank["max_len"],
                note="60 CLEF topics")


COSTS = Costs(
    {"mlm_language_adapter": _language_module, "ranking_adapter": _ranking_module, "rerank_clir": _rerank_clir},
    hub={"bert-base-multilingual-uncased": ("bert", {"vocab_size": 105879}),       # mBERT: BERT-base, 105,879 pieces
         "sentence-transformers/distilbert-multilingual-nli-stsb-quora-ranking": ("distilbert",
                                                                                 {"vocab_size": 119547})})

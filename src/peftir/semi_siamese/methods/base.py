"""What every method builder shares: the Adam groups it returns and how it freezes and attaches.

A builder (``peftir.semi_siamese.methods.<name>.build``) freezes or augments the ranker's BERT in place and
returns the Adam parameter groups of what it trains, at the learning rates of Table 8.
"""
from __future__ import annotations

from torch import nn

from ..rankers import Ranker

ParamGroups = list[dict]


def freeze(ranker: Ranker) -> None:
    for parameter in ranker.bert.parameters():
        parameter.requires_grad_(False)


def attach(ranker: Ranker, name: str, module: nn.Module, lr: dict) -> ParamGroups:
    """Add a module beside BERT (prompts, prefixes); it trains at the PEFT learning rate."""
    ranker.peft[name] = module
    return [{"params": list(module.parameters()), "lr": lr["peft"]}]


def bottleneck(ranker: Ranker, settings: dict) -> int:
    """The reparametrisation MLP's width, given at BERT-base size (768) and scaled to the backbone."""
    return max(1, round(settings["bottleneck"] * ranker.hidden / 768))

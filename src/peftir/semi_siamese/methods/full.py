"""Full fine-tuning: every BERT weight trains."""
from __future__ import annotations

from ..rankers import Ranker
from .base import ParamGroups


def build(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Every BERT weight trains at the BERT learning rate (Table 8: 1e-5)."""
    for parameter in ranker.bert.parameters():
        parameter.requires_grad_(True)
    return [{"params": list(ranker.bert.parameters()), "lr": lr["bert"]}]

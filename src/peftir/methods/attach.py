"""Preparing a ranker for a method: the method's parts attached in order, the head always trained.

A method arrives resolved (``peftir.layout.resolve_method``): its parts, each naming the builder
module of this package that attaches it (``full``, ``prompt``, ``prefix``, ``lora``,
``ss_prefix``, ``ss_lora``) and its settings. In a sequential hybrid the first part is loaded from
its own run afterwards and stays frozen (``learned.load_first_stage``); only the second trains.
The ranker head (everything outside ``ranker.bert``) always trains at the head learning rate.
"""
from __future__ import annotations

from typing import Callable

from ..rankers.models import Ranker
from . import full, lora, prefix, prompt, ss_lora, ss_prefix
from .base import ParamGroups
from .learned import learned_parameters

BUILDERS: dict[str, Callable[[Ranker, dict, dict], ParamGroups]] = {
    "full": full.build, "prompt": prompt.build, "prefix": prefix.build, "lora": lora.build,
    "ss_prefix": ss_prefix.build, "ss_lora": ss_lora.build,
}


def apply(ranker: Ranker, method: dict, lr: dict) -> ParamGroups:
    """Attach ``method``'s parts to ``ranker`` in place; the Adam groups of what trains, the head's included."""
    if method["bi_encoder_only"] and not ranker.bi_encoder:
        raise ValueError(f"{method['name']} is semi-Siamese: it applies to bi-encoders (twinbert, colbert) only")
    groups: ParamGroups = []
    for index, part in enumerate(method["parts"]):
        if index and method["sequential"]:   # the first part is loaded from its own run and frozen
            for parameter in learned_parameters(ranker).values():
                parameter.requires_grad_(False)
            groups = []
        groups += BUILDERS[part["builder"]](ranker, part["settings"], lr)
    for parameter in ranker.head_parameters():
        parameter.requires_grad_(True)
    return groups + [{"params": ranker.head_parameters(), "lr": lr["ranker"]}]

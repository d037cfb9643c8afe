"""Semi-Siamese prefix-tuning (paper §3.3.1, appendix A, Table 6): query and document prefixes
generated from one shared source, differing by role-specific generators.

The bi-encoder tells its role hooks whether it is encoding queries or documents
(``Ranker.encoder(role=...)``); the module generates the active role's prefixes.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn
from transformers.models.bert.modeling_bert import BertModel

from ..rankers import ROLES, QUERY, Ranker
from .base import ParamGroups, attach, bottleneck, freeze
from .prefix import PrefixTuning, generators


class SemiSiamesePrefixTuning(PrefixTuning):
    """Query and document prefixes generated from one shared source (Table 6 variants).

    ``average``: common + role-specific prefixes (eq. 4–5, the paper's SS prefix-tuning);
    ``concat``: the first ``common`` positions role-specific, the rest common (eq. 6–7);
    ``none``: role-specific MLPs only, the source still shared (eq. 8–9).
    """

    def __init__(self, bert: BertModel, length: int, bottleneck: int, variant: str, common: int) -> None:
        if variant not in ("average", "concat", "none"):
            raise ValueError(f"SS prefix variant must be average, concat or none, got {variant!r}")
        layers, hidden = bert.config.num_hidden_layers, bert.config.hidden_size
        # "none" has no common prefixes: only the shared source, no common per-layer MLPs
        super().__init__(bert, length, bottleneck, common_sets=0 if variant == "none" else layers)
        self.variant, self.common, self.role = variant, common, QUERY
        self.specific = nn.ModuleDict({role: generators(hidden, bottleneck, layers) for role in ROLES})
        # what remains per layer: a query and a document set, but for ``concat`` the common positions once
        distinct = len(ROLES) * common + (length - common) if variant == "concat" else len(ROLES) * length
        self.generated_parameters = distinct * hidden * layers

    def set_role(self, role: str) -> None:
        self.role = role

    def prefixes(self, layer: int) -> Tensor:
        specific = self.specific[self.role][layer](self.source.source)
        if self.variant == "none":
            return specific
        common = self.source(layer)
        if self.variant == "average":
            return common + specific
        return torch.cat([specific[:self.common], common[self.common:]])


def build(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; query and document prefixes from one shared source (Table 6 variant)."""
    if settings["kind"] != "hidden":
        raise ValueError("semi-Siamese prefix-tuning is defined on hidden-state prefixes (methods.prefix.kind: hidden)")
    freeze(ranker)
    module = SemiSiamesePrefixTuning(ranker.bert, settings["length"], bottleneck(ranker, settings),
                                     settings["variant"], settings["common_length"])
    ranker.role_hooks.append(module.set_role)
    return attach(ranker, "ss_prefix", module, lr)

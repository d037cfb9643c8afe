"""Semi-Siamese lightweight fine-tuning (paper §3.3, appendices A–B): one frozen BERT, query and
document paths that differ only by the modules a variant names.

The bi-encoder tells its role hooks whether it is encoding queries or documents
(``Ranker.encoder(role=...)``); like peft's tuner layers, each module here keeps
named sets and activates the query or the document set before each forward.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

import torch
from peft import LoraConfig, inject_adapter_in_model
from peft.tuners.lora import LoraLayer
from torch import Tensor, nn
from transformers.models.bert.modeling_bert import BertModel

from .prefix import PrefixSource, PrefixTuning
from .rankers import DOCUMENT, QUERY

ROLES = (QUERY, DOCUMENT)


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
        self.specific = nn.ModuleDict({role: PrefixSource(length, hidden, bottleneck, layers).mlps for role in ROLES})
        self.generated_parameters = len(ROLES) * length * hidden * layers   # a query and a document set

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


# Table 7: which projection's LoRA is shared by queries and documents; the other is per role.
SS_LORA_VARIANTS = {"hetero_value": {"query": "shared", "value": "per_role"},
                    "hetero_query": {"query": "per_role", "value": "shared"},
                    "none": {"query": "per_role", "value": "per_role"}}


class SemiSiameseLoRA(nn.Module):
    """peft LoRA adapters named ``<projection>_<shared|query|document>``; a role activates its set."""

    def __init__(self, bert: BertModel, config: LoraConfig, variant: str) -> None:
        super().__init__()
        self.adapters: list[str] = []
        if variant not in SS_LORA_VARIANTS:
            raise ValueError(f"SS LoRA variant must be one of {', '.join(SS_LORA_VARIANTS)}, got {variant!r}")
        for projection, sharing in SS_LORA_VARIANTS[variant].items():
            for owner in (("shared",) if sharing == "shared" else ROLES):
                self.adapters.append(f"{projection}_{owner}")
                with warnings.catch_warnings():   # several adapters in one model is the point here
                    warnings.filterwarnings("ignore", message="Already found a `peft_config`")
                    inject_adapter_in_model(replace(config, target_modules=[projection]), bert,
                                            adapter_name=self.adapters[-1])
        self.layers = [m for m in bert.modules() if isinstance(m, LoraLayer)]
        self.generated_parameters = 0          # the adapters are BERT parameters, counted there
        self.set_role(QUERY)

    def set_role(self, role: str) -> None:
        for layer in self.layers:
            # peft's set_adapter would also flip requires_grad; only the active set changes here
            layer._active_adapter = [name for name in layer.lora_A if name.endswith(("_shared", f"_{role}"))]

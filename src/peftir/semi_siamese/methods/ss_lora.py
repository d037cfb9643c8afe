"""Semi-Siamese LoRA (paper §3.3.2, appendix B, Table 7): one frozen BERT whose query and document
paths differ by which LoRA adapters are active.

The bi-encoder tells its role hooks whether it is encoding queries or documents
(``Ranker.encoder(role=...)``); like peft's tuner layers, this module keeps named adapters and
activates the query's or the document's set before each forward, through peft's public
``set_adapter``.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

from peft import LoraConfig, inject_adapter_in_model
from peft.tuners.lora import LoraLayer
from torch import nn
from transformers.models.bert.modeling_bert import BertModel

from ..rankers import ROLES, QUERY, Ranker
from .base import ParamGroups, freeze
from .lora import lora_config, lora_groups


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
        """Activate the role's adapters. peft's ``set_adapter`` also makes the active adapters trainable
        and the others frozen; what trains is the method's choice (a sequential hybrid's first part
        stays frozen), so every flag is put back as it was."""
        parameters = [p for layer in self.layers for p in layer.parameters()]
        trainable = [p.requires_grad for p in parameters]
        for layer in self.layers:
            layer.set_adapter([name for name in layer.lora_A if name.endswith(("_shared", f"_{role}"))])
        for parameter, flag in zip(parameters, trainable):
            parameter.requires_grad_(flag)


def build(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; LoRA shared on one projection, per role on the other (Table 7 variant)."""
    freeze(ranker)
    module = SemiSiameseLoRA(ranker.bert, lora_config(settings), settings["variant"])
    ranker.role_hooks.append(module.set_role)
    ranker.peft["ss_lora"] = module
    return lora_groups(ranker, module.adapters, lr)

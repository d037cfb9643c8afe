"""Prompt-tuning: ``length`` soft vectors before ``[CLS]``, generated from a source by an MLP.

The vectors (the prefixes' reparametrisation, with one MLP) are prepended to the input
embeddings and their positions dropped from the encoder's output, with forward hooks.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers.models.bert.modeling_bert import BertModel

from ..rankers import Ranker
from .base import ParamGroups, attach, bottleneck, freeze
from .prefix import PrefixSource


class PromptTuning(nn.Module):
    """Soft prompts before [CLS] (input embeddings), removed from the encoder's output."""

    def __init__(self, bert: BertModel, length: int, bottleneck: int) -> None:
        super().__init__()
        self.length = length
        self.source = PrefixSource(length, bottleneck, 1, bert.embeddings.word_embeddings.weight)
        self.generated_parameters = length * bert.config.hidden_size
        bert.register_forward_pre_hook(self._prepend, with_kwargs=True)
        bert.register_forward_hook(self._strip)

    def _prepend(self, module: BertModel, args, kwargs):
        ids = kwargs.pop("input_ids")
        embeds = module.embeddings.word_embeddings(ids)
        prompts = self.source(0).unsqueeze(0).expand(ids.shape[0], -1, -1).to(embeds.dtype)
        kwargs["inputs_embeds"] = torch.cat([prompts, embeds], dim=1)
        ones = torch.ones((ids.shape[0], self.length), dtype=torch.long, device=ids.device)
        if kwargs.get("attention_mask") is not None:
            kwargs["attention_mask"] = torch.cat([ones, kwargs["attention_mask"]], dim=1)
        if kwargs.get("token_type_ids") is not None:
            kwargs["token_type_ids"] = torch.cat([0 * ones, kwargs["token_type_ids"]], dim=1)
        return args, kwargs

    def _strip(self, module, args, output):
        output.last_hidden_state = output.last_hidden_state[:, self.length:]
        return output


def build(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; soft prompts before [CLS]. Sequences shrink by the prompt length to keep within positions."""
    freeze(ranker)
    ranker.max_seq_len -= settings["length"]
    return attach(ranker, "prompt", PromptTuning(ranker.bert, settings["length"], bottleneck(ranker, settings)), lr)

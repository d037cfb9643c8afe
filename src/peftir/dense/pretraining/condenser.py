"""Condenser and coCondenser pretraining (Gao & Callan; REFERENCE ``reference/condenser.md``, §2).

The backbone is a masked LM (BERT's, or RoBERTa's for DPTDR's coCondenser baseline). A head of ``head_layers``
fresh layers of the backbone's own kind reads the
late (last-layer) [CLS] followed by the early token states (the output of layer ``skip_from``), so the only
way the late layers reach the head's predictions is through [CLS]. The loss is the head's MLM loss plus the
backbone's own late MLM loss, both through the backbone's one MLM head (``lm.cls`` of BERT, ``lm.lm_head`` of
RoBERTa: transform, LayerNorm, decoder tied to the word embeddings), 1:1. The head is saved beside the backbone (coCondenser warm-starts
from both) and dropped for fine-tuning: the backbone alone is an ordinary BERT checkpoint.

coCondenser adds the span-contrastive loss (``peftir.dense.pretraining.contrastive``) on the late [CLS] of two
spans of each document, warm-started from a Condenser with its head.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from transformers import PreTrainedModel

HEAD_FILE = "condenser_head.pt"


def mlm_head(lm: PreTrainedModel) -> nn.Module:
    """The masked LM's output head: hidden states to vocabulary logits (BERT's ``cls``, RoBERTa's ``lm_head``)."""
    return lm.cls if hasattr(lm, "cls") else lm.lm_head


class CondenserHead(nn.Module):
    """The head's layers (of the backbone's own layer class) over [late CLS; early tokens]."""

    def __init__(self, lm: PreTrainedModel, layers: int) -> None:
        super().__init__()
        layer_class = type(lm.base_model.encoder.layer[0])
        self.layers = nn.ModuleList(layer_class(lm.config) for _ in range(layers))
        self.apply(lm._init_weights)           # as the released code: BERT's initialisation, random

    def forward(self, late_cls: Tensor, early_tokens: Tensor, mask: Tensor) -> Tensor:
        hidden = torch.cat([late_cls, early_tokens], dim=1)
        for layer in self.layers:
            hidden = layer(hidden, attention_mask=mask)[0]
        return hidden


class Condenser(nn.Module):
    """A masked LM with a Condenser head; ``forward`` gives the loss and the late [CLS] of each row."""

    def __init__(self, lm: PreTrainedModel, skip_from: int, head_layers: int, late_mlm: bool = True) -> None:
        super().__init__()
        if not 0 < skip_from < lm.config.num_hidden_layers:
            raise ValueError(f"skip_from = {skip_from}: the early layers must be 1 to "
                             f"{lm.config.num_hidden_layers - 1} of the backbone's {lm.config.num_hidden_layers}")
        self.lm, self.skip_from, self.late_mlm = lm, skip_from, late_mlm
        self.head = CondenserHead(lm, head_layers)

    def forward(self, input_ids: Tensor, attention_mask: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels if self.late_mlm else None,
                      output_hidden_states=True)
        hidden = out.hidden_states                       # [0] the embeddings, [i] the output of layer i
        mask = self.lm.get_extended_attention_mask(attention_mask, input_ids.shape)
        head = self.head(hidden[-1][:, :1], hidden[self.skip_from][:, 1:], mask)
        logits = mlm_head(self.lm)(head)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))
        if self.late_mlm:
            loss = loss + out.loss
        return loss, hidden[-1][:, 0]

    def save(self, directory: str | Path, tokenizer) -> None:
        """The backbone as a plain checkpoint (what fine-tuning loads) and the head beside it."""
        self.lm.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        torch.save(self.head.state_dict(), Path(directory) / HEAD_FILE)

    def load_head(self, directory: str | Path) -> None:
        """Warm-start the head from a Condenser checkpoint (coCondenser: a random head would corrupt the backbone)."""
        self.head.load_state_dict(torch.load(Path(directory) / HEAD_FILE, map_location="cpu", weights_only=True))

"""Retrieval-oriented intermediate pretraining (RIP; DPTDR §3.2, REFERENCE ``reference/dptdr.md``, §3).

The backbone keeps its structure (no Condenser head): a masked LM whose last-layer [CLS] of one sentence of a
passage must pick another sentence of the same passage among the sentences of the other passages of the batch
(``peftir.dense.pretraining.contrastive``), plus the backbone's own MLM loss, 1:1 (eq. 5). The authors did not
release this code; they say they reused coCondenser's, so the batch layout, the loss without temperature and
the gradient cache are coCondenser's, with sentences in place of spans.
"""
from __future__ import annotations

from pathlib import Path

from torch import Tensor, nn
from transformers import PreTrainedModel


class RetrievalOrientedLM(nn.Module):
    """``forward`` gives the MLM loss and the last-layer [CLS] of each row (what the contrastive loss reads)."""

    def __init__(self, lm: PreTrainedModel) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: Tensor, attention_mask: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
        return out.loss, out.hidden_states[-1][:, 0]

    def save(self, directory: str | Path, tokenizer) -> None:
        """The backbone as a plain checkpoint: RIP changes no structure, so nothing goes beside it."""
        self.lm.save_pretrained(directory)
        tokenizer.save_pretrained(directory)

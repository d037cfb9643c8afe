"""RIP on deep prompts: the other of DPTDR's two ways to pretrain for DPT (§3.2 "Pre-train deep prompts", §4.4,
Table 6), never released by the authors.

The RIP task unchanged (``peftir.dense.pretraining.rip``: a sentence's last-layer [CLS] must pick its passage's other
sentence among the batch's, plus the MLM loss, 1:1), but the masked LM is frozen whole (encoder and MLM head) and
only deep prompts of ``length`` train, the same peft prefix a DPT retriever has
(``peftir.dense.deep_prompt``: no reparametrisation, as the paper's Table 6). The encoder runs under the
prompts and the frozen MLM head reads its output, because a masked LM's own forward takes no past keys and
values. The run saves the prompts alone (peft's adapter), which a DPT retriever on the same backbone starts from
instead of random ones.
"""
from __future__ import annotations

from pathlib import Path

from torch import Tensor, nn
from torch.nn import functional as F
from transformers import PreTrainedModel

from ...execution import audit
from ..deep_prompt import deep_prompts
from .condenser import mlm_head


class PromptedRetrievalLM(nn.Module):
    """``forward`` gives the MLM loss and the last-layer [CLS] of each row, as ``RetrievalOrientedLM`` does, with
    only the prompts trainable."""

    def __init__(self, lm: PreTrainedModel, length: int, dropout: float) -> None:
        super().__init__()
        lm.requires_grad_(False)                       # the MLM head too: it is the backbone's, kept as it is
        self.head = mlm_head(lm)
        self.encoder = deep_prompts(lm.base_model, length, reparametrise=False, mlp_hidden=None, dropout=dropout)

    def forward(self, input_ids: Tensor, attention_mask: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        logits = self.head(states)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1)), states[:, 0]

    def save(self, directory: str | Path, tokenizer) -> None:
        """The prompts alone (peft's adapter files): the backbone is the one the run started from, unchanged, so
        neither it nor its tokenizer goes beside them. peft saves what its prompt encoder outputs, so the encoder
        is put in eval mode first: in training mode the prompt dropout would be in the saved values."""
        training = self.training
        self.eval()
        with audit.bookkeeping():                       # peft runs its prompt encoder to save
            self.encoder.save_pretrained(directory)
        self.train(training)

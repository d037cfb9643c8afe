"""Inverse Cloze Task pretraining (ICT; Lee et al. 2019, ORQA), the Condenser paper's second baseline (Tables 3, 5).

From each passage one sentence, drawn at random every time the passage is drawn, is a pseudo-query and the
passage's other sentences are its context; the sentence is left in its context at ``KEEP_RATE`` (ORQA's
``mask_rate`` 0.9 removes it 90 % of the time), so the encoder learns word matching as well as context. The
loss is a softmax over the [CLS] inner products of every query against every context of the batch
(``contrastive.inverse_cloze_loss``); no MLM. The paper used Lee et al.'s released checkpoint because its GPUs
fitted a batch of 64 (A.3); here the batch of 4,096 runs through the gradient cache
(``retrieval_pretraining.pretraining_update``) on one GPU, so the row is reproduced, not copied.

Ours, named in ``config/paper-condenser.yaml`` and ``docs/fidelity/condenser.md``: one tied encoder whose
last-layer [CLS] is the vector, because the retrievers fine-tuned from it are tied and read [CLS] unprojected
(Lee et al.'s paper describes query and block towers; their released ``ict_model.py`` shares one module for both,
read through BERT's pooler and projected to 128 dimensions); query and context share the run's ``max_len`` (ORQA:
64 and 288 tokens, the block with its title).
"""
from __future__ import annotations

import random
from pathlib import Path

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

Ids = list[int]
KEEP_RATE = 0.1                  # Lee et al.: the query sentence stays in its context 10 % of the time


def cloze_pairs(passages: list[list[Ids]], rng: random.Random, keep_rate: float = KEEP_RATE) -> list[Ids]:
    """From each passage (its sentences, at least two) a random sentence (row 2i) and its context (row 2i+1): the
    other sentences in order, or, at ``keep_rate``, the whole passage."""
    rows = []
    for sentences in passages:
        chosen = rng.randrange(len(sentences))
        kept = rng.random() < keep_rate
        context = [piece for index, sentence in enumerate(sentences) if kept or index != chosen
                   for piece in sentence]
        rows += [sentences[chosen], context]
    return rows


class Unmasked:
    """Rows of word-piece ids → a padded batch of ``[CLS] row [SEP]`` cropped to ``max_len``, with its attention
    mask and no labels (ICT has no MLM; a context of several sentences is longer than one)."""

    def __init__(self, tokenizer, max_len: int) -> None:
        self.tokenizer, self.longest = tokenizer, max_len - 2

    def __call__(self, rows: list[Ids]) -> dict[str, Tensor]:
        return wrapped_batch(self.tokenizer, [row[:self.longest] for row in rows])


def wrapped_batch(tokenizer, rows: list[Ids]) -> dict[str, Tensor]:
    """Rows of word-piece ids as ``[CLS] row [SEP]``, padded to the longest, with their attention mask."""
    wrapped = [[tokenizer.cls_token_id, *row, tokenizer.sep_token_id] for row in rows]
    ids = torch.full((len(wrapped), max(map(len, wrapped))), tokenizer.pad_token_id)
    mask = torch.zeros_like(ids)
    for index, row in enumerate(wrapped):
        ids[index, :len(row)] = torch.tensor(row)
        mask[index, :len(row)] = 1
    return {"input_ids": ids, "attention_mask": mask}


class InverseCloze(nn.Module):
    """One encoder for queries and contexts; ``forward`` gives no loss of its own (0: the contrastive loss is the
    whole objective) and the last-layer [CLS] of each row."""

    def __init__(self, lm: PreTrainedModel) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[float, Tensor]:
        out = self.lm.base_model(input_ids=input_ids, attention_mask=attention_mask)
        return 0.0, out.last_hidden_state[:, 0]

    def save(self, directory: str | Path, tokenizer) -> None:
        """The backbone as a plain checkpoint (its MLM head untouched: ICT trains none)."""
        self.lm.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
